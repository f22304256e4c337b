//! The library's layers: the order `src/lib.rs` documents (and the README repeats) is the
//! order its modules import in. A module may use the modules of earlier layers, never a
//! module of its own layer or of a later one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules outside the layers: the test support the crate compiles for its own tests and
/// fuzz targets. They may use any layer, and any code's tests may use them.
const SUPPORT: &[&str] = &["fuzzing", "shared_fixtures"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The layers named by the longest `a → b / c → …` chain of `text`: each layer's
/// modules, in order. Parenthesised remarks are dropped, `/` separates the modules of one
/// layer, and punctuation after a name ends the chain.
fn chain(text: &str) -> Vec<Vec<String>> {
    let mut plain = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '[' | ']' | '`' => {}
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    (0..words.len())
        .filter(|&i| is_name(words[i]) && words.get(i + 1) == Some(&"→"))
        .map(|start| chain_from(&words, start))
        .max_by_key(Vec::len)
        .expect("a chain of layers `a → b → …`")
}

fn is_name(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// The chain whose first module is `words[start]`.
fn chain_from(words: &[&str], start: usize) -> Vec<Vec<String>> {
    let mut layers = vec![vec![words[start].to_owned()]];
    let mut i = start + 1;
    while let (Some(&joint), Some(&word)) = (words.get(i), words.get(i + 1)) {
        let name: String = word
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        match joint {
            "→" => layers.push(vec![name.clone()]),
            "/" => layers.last_mut().unwrap().push(name.clone()),
            _ => break,
        }
        assert!(!name.is_empty(), "a layer without a module name: {word:?}");
        i += 2;
        if name.len() != word.len() {
            break; // punctuation ends the chain: `ffi.`, `ffi,`
        }
    }
    layers
}

/// The `//!` lines of a file, as one text.
fn doc_comment(text: &str) -> String {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.to_owned())
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for `lib.rs`).
fn module_of(file: &Path) -> Option<String> {
    let relative = file.strip_prefix(root().join("src")).unwrap();
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// The top-level modules a piece of code names through `crate::` paths (`use` lines, a
/// `crate::{a, b}` group, or a path written inline), with the line of each. Comments,
/// doc links included, are not imports and are skipped.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut group: Option<(usize, usize)> = None; // (line, brace depth) inside `crate::{`
    for (number, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap();
        let mut rest = line;
        if let Some((at, mut depth)) = group {
            let mut closed = None;
            for (index, c) in line.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => {
                        closed = Some(index);
                        break;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let Some(end) = closed else {
                found.extend(group_members(line).map(|m| (at, m)));
                group = Some((at, depth));
                continue;
            };
            found.extend(group_members(&line[..end]).map(|m| (at, m)));
            group = None;
            rest = &line[end + 1..];
        }
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + "crate::".len()..];
            rest = after;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `$crate::` in a macro, or a longer name ending in `crate`
            }
            if let Some(inner) = after.strip_prefix('{') {
                match inner.find('}') {
                    Some(end) => {
                        found.extend(group_members(&inner[..end]).map(|m| (number + 1, m)))
                    }
                    None => {
                        found.extend(group_members(inner).map(|m| (number + 1, m)));
                        group = Some((number + 1, 1));
                        break;
                    }
                }
                continue;
            }
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((number + 1, name));
        }
    }
    found
}

/// The first name of each item of a `{a::b, c, d::{e, f}}` group's text, at its top level.
fn group_members(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut depth = 0usize;
    let mut items = Vec::new();
    let mut item_start = true;
    for (index, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => item_start = true,
            c if item_start && (c.is_alphanumeric() || c == '_') => {
                item_start = false;
                let name: String = text[index..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if depth == 0 {
                    items.push(name);
                }
            }
            _ => {}
        }
    }
    items.into_iter()
}

#[test]
fn no_module_imports_against_the_documented_layers() {
    let lib = read(&root().join("src/lib.rs"));
    let layers = chain(&doc_comment(&lib));
    let mut rank = BTreeMap::new();
    for (index, layer) in layers.iter().enumerate() {
        for module in layer {
            assert!(
                rank.insert(module.clone(), index).is_none(),
                "{module} is named twice in the layers of src/lib.rs"
            );
        }
    }
    for module in declared_modules(&lib) {
        assert!(
            rank.contains_key(&module) || SUPPORT.contains(&module.as_str()),
            "src/lib.rs declares `{module}` but its layers do not place it (name it in the \
             layers paragraph of src/lib.rs and the README's layers line): {layers:?}"
        );
    }
    for module in rank.keys() {
        assert!(
            declared_modules(&lib).contains(module),
            "the layers of src/lib.rs name `{module}`, which it does not declare"
        );
    }

    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    let mut against = Vec::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        if SUPPORT.contains(&module.as_str()) {
            continue;
        }
        let Some(&own) = rank.get(&module) else {
            panic!("{} is in no layer", file.display());
        };
        for (line, used) in crate_paths(&read(file)) {
            if used == module || SUPPORT.contains(&used.as_str()) {
                continue;
            }
            let Some(&theirs) = rank.get(&used) else {
                continue; // an item of the crate root, not a module
            };
            if theirs >= own {
                let relative = file.strip_prefix(root()).unwrap();
                against.push(format!(
                    "{}:{line}: `{module}` uses `{used}`",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        against.is_empty(),
        "imports against the layers {layers:?}:\n{}",
        against.join("\n")
    );
}

#[test]
fn the_readme_names_the_same_layers() {
    let lib = chain(&doc_comment(&read(&root().join("src/lib.rs"))));
    let readme = read(&root().join("README.md"));
    let at = readme
        .find("The layers")
        .expect("the README's layers paragraph");
    let paragraph = readme[at..].split("\n\n").next().unwrap();
    assert_eq!(chain(paragraph), lib);
}

#[test]
fn the_scan_finds_every_form_of_import() {
    let code = "use crate::event::Event;\n\
                use crate::{api, tools::ToolPlan};\n\
                use crate::conversation::{\n    Role, Message,\n};\n\
                use crate::{\n    cursor::Decoder,\n    bridge::{Bridge, Output},\n};\n\
                let x = crate::openai::chat::f(); // crate::ffi in a comment\n\
                /// [`X`](crate::acp::X)\n\
                macro_rules! m { () => { $crate::anthropic::g() } }\n";
    let names: Vec<String> = crate_paths(code).into_iter().map(|(_, m)| m).collect();
    assert_eq!(
        names,
        [
            "event",
            "api",
            "tools",
            "conversation",
            "cursor",
            "bridge",
            "openai"
        ]
    );
    let layers =
        chain("Modules — framing → event / [`conversation`] (the models) → api → ffi. Then");
    assert_eq!(
        layers,
        [
            vec!["framing"],
            vec!["event", "conversation"],
            vec!["api"],
            vec!["ffi"]
        ]
    );
}
