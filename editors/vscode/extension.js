// The wo extension's client: starts `wo lsp` (the command named by the setting
// `wo.server.path`, `wo` on the PATH by default) for every `.wo` file, over stdio.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("wo").get("server.path") || "wo";
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "wo",
    "wo language server",
    { run: server, debug: server },
    {
      documentSelector: [{ scheme: "file", language: "wo" }, { scheme: "untitled", language: "wo" }],
    },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
