//! Build script: turns `src/grammar.lalrpop` into the LALR(1) parser tables in
//! `$OUT_DIR/grammar.rs`, which `parser.rs` includes with `lalrpop_mod!`.

fn main() {
    let res = lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .emit_rerun_directives(true)
        .process();
    if let Err(e) = res {
        eprintln!("lalrpop failed: {e}");
        std::process::exit(1);
    }
}
