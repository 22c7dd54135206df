//! The declarations of a data directory's stored tables, so a session on any
//! directory can query and insert at once: one `@table` class per stored table, with
//! its columns (`ref` columns name the referred table's class). A class is named after
//! its table with the first letter upper-cased and every character that cannot be in a
//! name dropped, and a number added where that name is taken (by another table or a
//! built-in type: `int` becomes `Int2`); `@table(name: …)` keeps the stored name when the two differ. The
//! stored indexes are declared too (`index:`, `sorted:`, `@unique`), so that opening
//! the directory with these declarations migrates nothing (a directory written before
//! log format 2 stores none); declaring the class again (under another class name with
//! the same `name:`) replaces this one.

use wo_vm::{ColType, IndexKind, Schema};

/// `(class name, stored table name, declaration)` for each stored table, in order.
pub fn declarations(schema: &Schema) -> Vec<(String, String, String)> {
    let mut classes: Vec<String> = Vec::new();
    for t in &schema.tables {
        let mut name: String = t
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            name.insert(0, 'T');
        }
        let mut chars = name.chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase()).unwrap_or('T');
        let mut name: String = std::iter::once(first).chain(chars).collect();
        let base = name.clone();
        let mut n = 2;
        // A table named `int` or `error` gets `Int2`, `Error2`: the built-in types keep
        // their names.
        while classes.contains(&name) || wo_compiler::BUILTIN_TYPES.contains(&name.as_str()) {
            name = format!("{base}{n}");
            n += 1;
        }
        classes.push(name);
    }
    schema
        .tables
        .iter()
        .zip(&classes)
        .map(|(t, class)| {
            let mut text = String::new();
            let col_name = |c: &usize| t.columns.get(*c).map_or("?", |c| c.name.as_str());
            let mut args = Vec::new();
            if *class != t.name {
                args.push(format!("name: \"{}\"", escape(&t.name)));
            }
            for ix in &t.indexes {
                let cols: Vec<&str> = ix.columns.iter().map(col_name).collect();
                match ix.kind {
                    IndexKind::Hash => args.push(format!("index: [{}]", cols.join(", "))),
                    IndexKind::Sorted => args.push(format!("sorted: [{}]", cols.join(", "))),
                    IndexKind::Unique => {}
                }
            }
            if args.is_empty() {
                text.push_str("@table\n");
            } else {
                text.push_str(&format!("@table({})\n", args.join(", ")));
            }
            text.push_str(&format!("class {class} {{\n"));
            for c in &t.columns {
                let ty = match c.ty {
                    ColType::Int => "Int".to_string(),
                    ColType::Float => "Float".to_string(),
                    ColType::Bool => "Bool".to_string(),
                    ColType::Text => "Text".to_string(),
                    ColType::Ref(r) => format!(
                        "ref {}",
                        classes.get(r as usize).map_or("?", String::as_str)
                    ),
                };
                let q = if c.nullable { "?" } else { "" };
                let unique = t.indexes.iter().any(|ix| {
                    ix.kind == IndexKind::Unique
                        && ix.columns.len() == 1
                        && t.columns
                            .get(ix.columns[0])
                            .is_some_and(|k| k.name == c.name)
                });
                let u = if unique { " @unique" } else { "" };
                text.push_str(&format!("  {}: {q}{ty}{u}\n", c.name));
            }
            text.push_str("}\n");
            (class.clone(), t.name.clone(), text)
        })
        .collect()
}

/// A name inside a text literal (also the language server's, for a table's name).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            _ => out.push(c),
        }
    }
    out
}
