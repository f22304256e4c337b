//! Which client tool a cursor tool is, and how its arguments are called there: one
//! data-driven table, [`KINDS`], and the functions that read it.
//!
//! Names and keys are compared *normalised* where the tables say so: lower case, ASCII
//! letters and digits only, so `filePath`, `file_path` and `FilePath` are one key, and
//! `Web_Fetch` is `webfetch`.
//!
//! # Tool names
//!
//! A name — a cursor tool kind from a `tool_call` event (`shellToolCall` → `shell`), or a
//! name the model wrote in a text envelope — resolves to an offered client tool by, in
//! order:
//!
//! 1. the exact client name;
//! 2. the normalised client name (`Web_Fetch` → `webfetch`);
//! 3. the alias table: the kind the name belongs to (its cursor kind, or any of the kind's
//!    client names, normalised), then that kind's client names in table order, each tried
//!    exactly and then normalised against the offered names (`shell` → `bash`,
//!    `ls` → `list`, `updateTodos` → `todowrite`, `delete` → `rm`).
//!
//! | cursor kind | client names tried, in order | mutating |
//! |---|---|---|
//! | `shell` | bash, shell, terminal, run_command, execute_command, run_terminal_command, run_shell_command, exec_command | no¹ |
//! | `read` | read, read_file, view, view_file, cat | no |
//! | `grep` | grep, rg, ripgrep, grep_search, search_files | no |
//! | `glob` | glob, find_files, file_search | no |
//! | `ls` | list, ls, list_directory, list_dir, list_files | no |
//! | `webFetch` | webfetch, web_fetch, fetch, fetch_url | no |
//! | `webSearch` | websearch, web_search, search_web | no |
//! | `semSearch`, `readLints`, `askQuestion` | — (no client equivalent: agent activity) | no |
//! | `edit` | edit, str_replace, str_replace_editor, edit_file, replace_in_file, multiedit | yes |
//! | `write` | write, write_file, write_to_file, create_file | yes |
//! | `delete` | rm, delete, delete_file, remove, remove_file | yes |
//! | `updateTodos` | todowrite, todo_write, update_todos, todos | yes |
//! | `task` | task, delegate, subagent, agent | yes |
//! | `mcp`, any other kind | — | yes² |
//!
//! Generic names (`search`, `find`, `run`) are deliberately absent: they name too many
//! different tools to be bound to one of cursor's.
//!
//! ¹ A shell command can change anything, but in client mode cursor never runs it: without
//! `--force` the CLI rejects shell calls in headless runs, so the call only *names* the
//! command, and the client runs it as `bash` (client mode must never pass `--force`, or the
//! command would run twice).
//! ² Unknown kinds (MCP tools, kinds added by future CLI builds) count as mutating and are
//! never intercepted.
//!
//! # Arguments of an intercepted call
//!
//! Only the keys in the kind's rows below are carried over; every other cursor key is
//! dropped (`toolCallId`, `simpleCommands`, `parsingResult`, `hasInputRedirect`,
//! `hasOutputRedirect`, `fileOutputThresholdBytes`, `isBackground`, `skipApproval`,
//! `timeoutBehavior`, `hardTimeout`, `closeStdin`, `conversationId`, …). For each row, the
//! first cursor key present with a value that is not `null` nor an empty string is
//! taken (`workingDirectory: ""` is dropped), and goes to the first client key of the row
//! that the client's schema declares (exact, then normalised). A schema that declares no
//! properties at all gets the row's first client key, unless it forbids extra keys.
//!
//! | kind | cursor key | client keys, first declared wins | conversion |
//! |---|---|---|---|
//! | `shell` | command | command, cmd, script | |
//! | `shell` | workingDirectory, cwd | workdir, cwd, working_directory, directory, dir | |
//! | `shell` | timeout | timeout, timeout_ms | milliseconds; seconds when the client key's description says seconds |
//! | `shell` | description | description | |
//! | `read` | path, filePath, targetFile | filePath, file_path, path, file, filename, target_file, absolute_path | |
//! | `read` | offset | offset, line_offset, start_line | |
//! | `read` | limit | limit, line_limit, max_lines | |
//! | `grep` | pattern, query, regex | pattern, regex, query | |
//! | `grep` | path, targetDirectory | path, directory, dir, cwd, search_path | |
//! | `grep` | glob, include, includePattern | include, glob, file_pattern, includes | |
//! | `grep` | caseInsensitive, `-i` | `-i`, case_insensitive, ignore_case | |
//! | `grep` | outputMode | output_mode | |
//! | `grep` | type | type | |
//! | `grep` | headLimit | head_limit | |
//! | `grep` | multiline | multiline | |
//! | `grep` | `-A`, `-B`, `-C` | `-A`, `-B`, `-C` | |
//! | `glob` | globPattern, pattern | pattern, glob, glob_pattern | |
//! | `glob` | targetDirectory, path | path, directory, dir, cwd, target_directory | |
//! | `ls` | path, targetDirectory | path, directory, dir, dir_path, target_directory | |
//! | `ls` | ignore | ignore | |
//! | `webFetch` | url | url, uri | |
//! | `webSearch` | searchTerm, query | query, search_term, q | |
//!
//! Mutating kinds have no rows: they are never intercepted (cursor has already run them,
//! and newer builds report an edit with only `{path}`).
//!
//! Each carried value is then fitted to the client key's own schema: a string holding a
//! number or boolean becomes one when the key wants that type; an *optional* key whose
//! value still does not fit (a timeout of `0` where the schema demands `> 0`) is dropped, so
//! the client uses its default. Nothing is invented: a required key no row can fill makes
//! the call unmappable (it stays agent activity), and a client tool whose schema requires
//! such a key is never delivered natively (see [`producible`]).
//!
//! # Arguments of an envelope
//!
//! The model writes envelope arguments against the client's schema, so they are kept as
//! written, except that a key the schema does not declare is renamed to a declared key it
//! matches normalised, or one of its synonym group in [`KEY_SYNONYMS`] (first declared
//! member wins), when that key is not already present:
//!
//! | synonyms |
//! |---|
//! | filePath, file_path, path, file, filename, target_file, absolute_path |
//! | command, cmd |
//! | workdir, cwd, working_directory, workingDirectory, directory |
//! | pattern, globPattern, glob_pattern, regex |
//! | query, searchTerm, search_term |
//! | content, contents, streamContent, text |
//! | oldString, old_string, old_str · newString, new_string, new_str · replaceAll, replace_all |

use serde_json::{Map, Value};

use super::schema;

/// One cursor tool kind: its client names and, when it can be intercepted, its argument
/// rows.
#[derive(Debug)]
pub struct KindSpec {
    /// The kind as the decoder names it (`shellToolCall` → `shell`).
    pub kind: &'static str,
    /// Client tool names this kind is, in order of preference.
    pub client_names: &'static [&'static str],
    /// Whether cursor running it changes files or state.
    pub mutating: bool,
    /// How its arguments map onto a client tool's (empty: never intercepted).
    pub arguments: &'static [ArgRule],
}

/// One row of an argument table.
#[derive(Debug)]
pub struct ArgRule {
    /// Cursor keys; the first present with a non-empty value is taken.
    pub from: &'static [&'static str],
    /// Client keys; the first the schema declares receives the value.
    pub to: &'static [&'static str],
    /// How the value is converted.
    pub conversion: Conversion,
}

/// A value conversion of an [`ArgRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Carried as is.
    Verbatim,
    /// A duration in milliseconds: divided by 1000 (rounded up) when the client key's
    /// description speaks of seconds and not of milliseconds.
    Milliseconds,
}

const fn rule(from: &'static [&'static str], to: &'static [&'static str]) -> ArgRule {
    ArgRule {
        from,
        to,
        conversion: Conversion::Verbatim,
    }
}

const SHELL_ARGS: &[ArgRule] = &[
    rule(&["command"], &["command", "cmd", "script"]),
    rule(
        &["workingDirectory", "cwd"],
        &["workdir", "cwd", "working_directory", "directory", "dir"],
    ),
    ArgRule {
        from: &["timeout"],
        to: &["timeout", "timeout_ms"],
        conversion: Conversion::Milliseconds,
    },
    rule(&["description"], &["description"]),
];

const READ_ARGS: &[ArgRule] = &[
    rule(
        &["path", "filePath", "targetFile"],
        &[
            "filePath",
            "file_path",
            "path",
            "file",
            "filename",
            "target_file",
            "absolute_path",
        ],
    ),
    rule(&["offset"], &["offset", "line_offset", "start_line"]),
    rule(&["limit"], &["limit", "line_limit", "max_lines"]),
];

const GREP_ARGS: &[ArgRule] = &[
    rule(
        &["pattern", "query", "regex"],
        &["pattern", "regex", "query"],
    ),
    rule(
        &["path", "targetDirectory"],
        &["path", "directory", "dir", "cwd", "search_path"],
    ),
    rule(
        &["glob", "include", "includePattern"],
        &["include", "glob", "file_pattern", "includes"],
    ),
    rule(
        &["caseInsensitive", "-i"],
        &["-i", "case_insensitive", "ignore_case"],
    ),
    rule(&["outputMode"], &["output_mode"]),
    rule(&["type"], &["type"]),
    rule(&["headLimit"], &["head_limit"]),
    rule(&["multiline"], &["multiline"]),
    rule(&["-A"], &["-A"]),
    rule(&["-B"], &["-B"]),
    rule(&["-C"], &["-C"]),
];

const GLOB_ARGS: &[ArgRule] = &[
    rule(
        &["globPattern", "pattern"],
        &["pattern", "glob", "glob_pattern"],
    ),
    rule(
        &["targetDirectory", "path"],
        &["path", "directory", "dir", "cwd", "target_directory"],
    ),
];

const LS_ARGS: &[ArgRule] = &[
    rule(
        &["path", "targetDirectory"],
        &["path", "directory", "dir", "dir_path", "target_directory"],
    ),
    rule(&["ignore"], &["ignore"]),
];

const WEB_FETCH_ARGS: &[ArgRule] = &[rule(&["url"], &["url", "uri"])];

const WEB_SEARCH_ARGS: &[ArgRule] = &[rule(
    &["searchTerm", "query"],
    &["query", "search_term", "q"],
)];

/// The alias and argument table; see the module docs.
pub const KINDS: &[KindSpec] = &[
    KindSpec {
        kind: "shell",
        client_names: &[
            "bash",
            "shell",
            "terminal",
            "run_command",
            "execute_command",
            "run_terminal_command",
            "run_shell_command",
            "exec_command",
        ],
        mutating: false,
        arguments: SHELL_ARGS,
    },
    KindSpec {
        kind: "read",
        client_names: &["read", "read_file", "view", "view_file", "cat"],
        mutating: false,
        arguments: READ_ARGS,
    },
    KindSpec {
        kind: "grep",
        client_names: &["grep", "rg", "ripgrep", "grep_search", "search_files"],
        mutating: false,
        arguments: GREP_ARGS,
    },
    KindSpec {
        kind: "glob",
        client_names: &["glob", "find_files", "file_search"],
        mutating: false,
        arguments: GLOB_ARGS,
    },
    KindSpec {
        kind: "ls",
        client_names: &["list", "ls", "list_directory", "list_dir", "list_files"],
        mutating: false,
        arguments: LS_ARGS,
    },
    KindSpec {
        kind: "webFetch",
        client_names: &["webfetch", "web_fetch", "fetch", "fetch_url"],
        mutating: false,
        arguments: WEB_FETCH_ARGS,
    },
    KindSpec {
        kind: "webSearch",
        client_names: &["websearch", "web_search", "search_web"],
        mutating: false,
        arguments: WEB_SEARCH_ARGS,
    },
    KindSpec {
        kind: "semSearch",
        client_names: &[],
        mutating: false,
        arguments: &[],
    },
    KindSpec {
        kind: "readLints",
        client_names: &[],
        mutating: false,
        arguments: &[],
    },
    KindSpec {
        kind: "askQuestion",
        client_names: &[],
        mutating: false,
        arguments: &[],
    },
    KindSpec {
        kind: "edit",
        client_names: &[
            "edit",
            "str_replace",
            "str_replace_editor",
            "edit_file",
            "replace_in_file",
            "multiedit",
        ],
        mutating: true,
        arguments: &[],
    },
    KindSpec {
        kind: "write",
        client_names: &["write", "write_file", "write_to_file", "create_file"],
        mutating: true,
        arguments: &[],
    },
    KindSpec {
        kind: "delete",
        client_names: &["rm", "delete", "delete_file", "remove", "remove_file"],
        mutating: true,
        arguments: &[],
    },
    KindSpec {
        kind: "updateTodos",
        client_names: &["todowrite", "todo_write", "update_todos", "todos"],
        mutating: true,
        arguments: &[],
    },
    KindSpec {
        kind: "task",
        client_names: &["task", "delegate", "subagent", "agent"],
        mutating: true,
        arguments: &[],
    },
    KindSpec {
        kind: "mcp",
        client_names: &[],
        mutating: true,
        arguments: &[],
    },
];

/// Key synonym groups for envelope arguments; see the module docs.
pub const KEY_SYNONYMS: &[&[&str]] = &[
    &[
        "filePath",
        "file_path",
        "path",
        "file",
        "filename",
        "target_file",
        "absolute_path",
    ],
    &["command", "cmd"],
    &[
        "workdir",
        "cwd",
        "working_directory",
        "workingDirectory",
        "directory",
    ],
    &["pattern", "globPattern", "glob_pattern", "regex"],
    &["query", "searchTerm", "search_term"],
    &["content", "contents", "streamContent", "text"],
    &["oldString", "old_string", "old_str"],
    &["newString", "new_string", "new_str"],
    &["replaceAll", "replace_all"],
];

/// Lower case, ASCII letters and digits only.
#[must_use]
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn same(a: &str, b: &str) -> bool {
    a == b || normalise(a) == normalise(b)
}

/// The table row of a cursor kind: exact kind, normalised kind, then a kind whose client
/// names include it (`bash` → `shell`). An empty or punctuation-only name is no kind.
#[must_use]
pub fn kind(name: &str) -> Option<&'static KindSpec> {
    if let Some(exact) = KINDS.iter().find(|spec| spec.kind == name) {
        return Some(exact);
    }
    let wanted = normalise(name);
    if wanted.is_empty() {
        return None;
    }
    KINDS
        .iter()
        .find(|spec| normalise(spec.kind) == wanted)
        .or_else(|| {
            KINDS
                .iter()
                .find(|spec| spec.client_names.iter().any(|n| normalise(n) == wanted))
        })
}

/// Whether a cursor tool kind changes files or state (never intercepted). Unknown kinds
/// (MCP tools and future ones) count as mutating.
#[must_use]
pub fn is_mutating(kind_name: &str) -> bool {
    kind(kind_name).is_none_or(|spec| spec.mutating)
}

/// The cursor kind a client tool name is (its kind's name or one of its client names,
/// normalised).
#[must_use]
pub fn kind_of_client_tool(client_name: &str) -> Option<&'static str> {
    kind(client_name).map(|spec| spec.kind)
}

/// The offered client tool for a cursor kind: the kind's client names in table order
/// (then the kind's own name), each tried exactly and then normalised.
#[must_use]
pub fn client_tool_for_kind<'a>(kind_name: &str, offered: &[&'a str]) -> Option<&'a str> {
    let spec = KINDS.iter().find(|spec| spec.kind == kind_name)?;
    spec.client_names
        .iter()
        .copied()
        .chain(std::iter::once(spec.kind))
        .find_map(|candidate| {
            offered
                .iter()
                .find(|name| **name == candidate)
                .or_else(|| offered.iter().find(|name| same(name, candidate)))
                .copied()
        })
        .filter(|_| !spec.client_names.is_empty())
}

/// Resolves a tool name (written by the model, or a cursor kind): exact, normalised,
/// then through the alias table.
#[must_use]
pub fn resolve_name<'a>(name: &str, offered: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = offered.iter().find(|o| **o == name) {
        return Some(exact);
    }
    let wanted = normalise(name);
    if wanted.is_empty() {
        return None;
    }
    if let Some(close) = offered.iter().find(|o| normalise(o) == wanted) {
        return Some(close);
    }
    client_tool_for_kind(kind(name)?.kind, offered)
}

/// The client key a list of candidates goes to: the first candidate the schema declares
/// (exact, then normalised); the first candidate when the schema declares nothing and
/// allows extra keys.
fn target<'s>(candidates: &[&'static str], tool_schema: &'s Value) -> Option<&'s str> {
    match schema::properties(tool_schema) {
        Some(declared) if !declared.is_empty() => candidates.iter().find_map(|candidate| {
            declared
                .keys()
                .find(|key| key.as_str() == *candidate)
                .or_else(|| declared.keys().find(|key| same(key, candidate)))
                .map(String::as_str)
        }),
        _ if schema::forbids_additional(tool_schema) => None,
        _ => candidates.first().copied(),
    }
}

/// Whether every key the client schema requires can be filled from the kind's argument
/// rows: a client tool is only delivered natively when it is.
#[must_use]
pub fn producible(spec: &KindSpec, tool_schema: &Value) -> bool {
    if spec.arguments.is_empty() {
        return false;
    }
    let filled: Vec<&str> = spec
        .arguments
        .iter()
        .filter_map(|rule| target(rule.to, tool_schema))
        .collect();
    schema::required(tool_schema)
        .iter()
        .all(|key| filled.contains(key))
}

/// Cursor's arguments for a call of `spec`'s kind, renamed and fitted to the client tool's
/// schema (see the module docs). The result still has to be validated as a whole.
#[must_use]
pub fn map_arguments(
    spec: &KindSpec,
    cursor_args: &Map<String, Value>,
    tool_schema: &Value,
) -> Map<String, Value> {
    let required = schema::required(tool_schema);
    let mut mapped = Map::new();
    for rule in spec.arguments {
        let Some(value) = rule
            .from
            .iter()
            .filter_map(|key| cursor_args.get(*key))
            .find(|value| !is_blank(value))
        else {
            continue;
        };
        let Some(key) = target(rule.to, tool_schema) else {
            continue;
        };
        if mapped.contains_key(key) {
            continue;
        }
        let property = schema::properties(tool_schema).and_then(|p| p.get(key));
        let value = convert(value, rule.conversion, property);
        let value = match property {
            Some(property) => {
                let value = coerce(value, property);
                if !required.contains(&key) && !schema::is_valid(property, &value) {
                    // An optional key that does not fit: the client's default is better
                    // than no call at all.
                    continue;
                }
                value
            }
            None => value,
        };
        mapped.insert(key.to_owned(), value);
    }
    mapped
}

/// Envelope arguments with undeclared keys renamed to the declared keys they stand for
/// (see the module docs); everything else as written.
#[must_use]
pub fn rename_keys(arguments: &Map<String, Value>, tool_schema: &Value) -> Map<String, Value> {
    let Some(declared) = schema::properties(tool_schema).filter(|d| !d.is_empty()) else {
        return arguments.clone();
    };
    let mut renamed = Map::new();
    // Declared keys first, so that a synonym never displaces a key written as declared.
    for (key, value) in arguments.iter().filter(|(k, _)| declared.contains_key(*k)) {
        renamed.insert(key.clone(), value.clone());
    }
    for (key, value) in arguments.iter().filter(|(k, _)| !declared.contains_key(*k)) {
        let wanted = normalise(key);
        let by_name = declared.keys().find(|d| normalise(d) == wanted);
        let by_group = || {
            KEY_SYNONYMS
                .iter()
                .filter(|group| group.iter().any(|k| normalise(k) == wanted))
                .find_map(|group| {
                    group
                        .iter()
                        .find_map(|k| declared.keys().find(|d| same(d, k)))
                })
        };
        let key = match by_name.or_else(by_group) {
            Some(target) if !renamed.contains_key(target) => target.clone(),
            _ => key.clone(),
        };
        renamed.entry(key).or_insert_with(|| value.clone());
    }
    renamed
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        _ => false,
    }
}

fn convert(value: &Value, conversion: Conversion, property: Option<&Value>) -> Value {
    match conversion {
        Conversion::Verbatim => value.clone(),
        Conversion::Milliseconds => {
            let description = property
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_lowercase();
            let in_seconds = description.contains("second")
                && !description.contains("milli")
                && !description.contains("ms");
            match (in_seconds, value.as_u64()) {
                (true, Some(ms)) => Value::from(ms.div_ceil(1000)),
                _ => value.clone(),
            }
        }
    }
}

/// A string holding a number or boolean, where the schema wants that type.
fn coerce(value: Value, property: &Value) -> Value {
    let Value::String(text) = &value else {
        return value;
    };
    let kinds = schema::types(property);
    if kinds.is_empty() || kinds.contains(&"string") {
        return value;
    }
    let text = text.trim();
    if kinds.contains(&"integer") {
        if let Ok(n) = text.parse::<i64>() {
            return Value::from(n);
        }
    }
    if kinds.contains(&"number") {
        if let Some(n) = text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            return Value::Number(n);
        }
    }
    if kinds.contains(&"boolean") {
        match text {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OPENCODE: &[&str] = &[
        "bash",
        "edit",
        "glob",
        "grep",
        "read",
        "skill",
        "task",
        "todowrite",
        "webfetch",
        "write",
        "list",
    ];

    #[test]
    fn kinds_to_client_tools() {
        assert_eq!(client_tool_for_kind("shell", OPENCODE), Some("bash"));
        assert_eq!(client_tool_for_kind("ls", OPENCODE), Some("list"));
        assert_eq!(client_tool_for_kind("webFetch", OPENCODE), Some("webfetch"));
        assert_eq!(
            client_tool_for_kind("updateTodos", OPENCODE),
            Some("todowrite")
        );
        assert_eq!(client_tool_for_kind("semSearch", OPENCODE), None);
        assert_eq!(client_tool_for_kind("mcp", &["mcp"]), None);
        assert_eq!(client_tool_for_kind("delete", &["rm"]), Some("rm"));
        // Claude Code's capitalised names.
        assert_eq!(
            client_tool_for_kind("shell", &["Bash", "Read"]),
            Some("Bash")
        );
        assert_eq!(client_tool_for_kind("ls", &["LS"]), Some("LS"));
        // Table order decides between two candidates.
        assert_eq!(
            client_tool_for_kind("read", &["view", "read"]),
            Some("read")
        );
    }

    #[test]
    fn every_kind_resolves_from_its_decoder_name() {
        for spec in KINDS {
            assert_eq!(kind(spec.kind).map(|s| s.kind), Some(spec.kind));
            assert_eq!(is_mutating(spec.kind), spec.mutating, "{}", spec.kind);
            if spec.mutating {
                assert!(
                    spec.arguments.is_empty(),
                    "{} is never intercepted",
                    spec.kind
                );
            }
            for name in spec.client_names {
                assert_eq!(kind_of_client_tool(name), Some(spec.kind), "{name}");
            }
        }
        assert_eq!(kind("bash").map(|s| s.kind), Some("shell"));
        assert_eq!(kind("WebFetch").map(|s| s.kind), Some("webFetch"));
        assert!(kind("").is_none() && kind("--").is_none());
        assert!(is_mutating("someNewKind") && is_mutating("mcp"));
        assert!(!is_mutating("read") && !is_mutating("semSearch"));
    }

    #[test]
    fn names_the_model_writes() {
        assert_eq!(resolve_name("write", OPENCODE), Some("write"));
        assert_eq!(resolve_name("Web_Fetch", OPENCODE), Some("webfetch"));
        assert_eq!(resolve_name("shell", OPENCODE), Some("bash"));
        assert_eq!(resolve_name("ls", OPENCODE), Some("list"));
        assert_eq!(resolve_name("updateTodos", OPENCODE), Some("todowrite"));
        assert_eq!(resolve_name("write_file", OPENCODE), Some("write"));
        assert_eq!(resolve_name("TodoWrite", OPENCODE), Some("todowrite"));
        assert_eq!(resolve_name("launch_missiles", OPENCODE), None);
        assert_eq!(resolve_name("", OPENCODE), None);
        assert_eq!(resolve_name("delete", &["rm", "bash"]), Some("rm"));
        // An exact offered name wins over the table.
        assert_eq!(resolve_name("search", &["search", "grep"]), Some("search"));
    }

    fn opencode_schema(name: &str) -> Value {
        match name {
            "bash" => json!({"type":"object","properties":{
                "command":{"type":"string"},
                "timeout":{"type":"integer","exclusiveMinimum":0,"description":"Optional timeout in milliseconds"},
                "workdir":{"type":"string"}},"required":["command"]}),
            "read" => json!({"type":"object","properties":{
                "filePath":{"type":"string"},"offset":{"type":"integer","minimum":0},
                "limit":{"type":"integer","minimum":0}},"required":["filePath"]}),
            _ => unreachable!(),
        }
    }

    fn shell() -> &'static KindSpec {
        kind("shell").unwrap()
    }

    #[test]
    fn shell_arguments() {
        let args = json!({"command":"ls -la","workingDirectory":"","timeout":30000,
            "toolCallId":"x\ny","simpleCommands":["ls"],"hasInputRedirect":false,
            "parsingResult":{"parsingFailed":false},"fileOutputThresholdBytes":"40000"});
        let mapped = map_arguments(shell(), args.as_object().unwrap(), &opencode_schema("bash"));
        assert_eq!(
            Value::Object(mapped),
            json!({"command":"ls -la","timeout":30000})
        );
        let args = json!({"command":"make","workingDirectory":"/src","timeout":0});
        let mapped = map_arguments(shell(), args.as_object().unwrap(), &opencode_schema("bash"));
        assert_eq!(
            Value::Object(mapped),
            json!({"command":"make","workdir":"/src"}),
            "the out-of-range optional timeout is left to the client's default"
        );
        let seconds = json!({"properties":{"cmd":{"type":"string"},
            "timeout":{"type":"number","description":"Timeout in seconds"},
            "cwd":{"type":"string"}}});
        let args = json!({"command":"x","timeout":30001,"workingDirectory":"/w"});
        assert_eq!(
            Value::Object(map_arguments(shell(), args.as_object().unwrap(), &seconds)),
            json!({"cmd":"x","timeout":31,"cwd":"/w"})
        );
    }

    #[test]
    fn schema_without_properties() {
        let args = json!({"command":"ls","toolCallId":"x","timeout":30000});
        let open = json!({"type":"object"});
        assert_eq!(
            Value::Object(map_arguments(shell(), args.as_object().unwrap(), &open)),
            json!({"command":"ls","timeout":30000})
        );
        let closed = json!({"type":"object","additionalProperties":false});
        assert!(map_arguments(shell(), args.as_object().unwrap(), &closed).is_empty());
    }

    #[test]
    fn read_glob_grep_ls_arguments() {
        let read = kind("read").unwrap();
        let args = json!({"path":"/a/b.rs","offset":"10","limit":20});
        assert_eq!(
            Value::Object(map_arguments(
                read,
                args.as_object().unwrap(),
                &opencode_schema("read")
            )),
            json!({"filePath":"/a/b.rs","offset":10,"limit":20})
        );
        let glob = kind("glob").unwrap();
        let schema = json!({"properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]});
        let args = json!({"globPattern":"**/*.rs","targetDirectory":"/a"});
        assert_eq!(
            Value::Object(map_arguments(glob, args.as_object().unwrap(), &schema)),
            json!({"pattern":"**/*.rs","path":"/a"})
        );
        let grep = kind("grep").unwrap();
        let schema = json!({"properties":{"pattern":{"type":"string"},"path":{"type":"string"},
            "include":{"type":"string"}},"required":["pattern"]});
        let args = json!({"pattern":"fn main","path":"src","glob":"*.rs","caseInsensitive":true,"outputMode":"content"});
        assert_eq!(
            Value::Object(map_arguments(grep, args.as_object().unwrap(), &schema)),
            json!({"pattern":"fn main","path":"src","include":"*.rs"})
        );
        let ls = kind("ls").unwrap();
        let schema = json!({"properties":{"path":{"type":"string"},"ignore":{"type":"array","items":{"type":"string"}}}});
        let args = json!({"path":"/a","ignore":["target"],"toolCallId":"t"});
        assert_eq!(
            Value::Object(map_arguments(ls, args.as_object().unwrap(), &schema)),
            json!({"path":"/a","ignore":["target"]})
        );
    }

    #[test]
    fn producible_requires_every_required_key() {
        assert!(producible(shell(), &opencode_schema("bash")));
        assert!(producible(kind("read").unwrap(), &opencode_schema("read")));
        let strict = json!({"properties":{"command":{"type":"string"},"sandbox":{"type":"string"}},
            "required":["command","sandbox"]});
        assert!(!producible(shell(), &strict));
        assert!(!producible(kind("edit").unwrap(), &json!({})));
        assert!(!producible(kind("semSearch").unwrap(), &json!({})));
    }

    #[test]
    fn envelope_keys() {
        let schema = json!({"properties":{"filePath":{"type":"string"},"oldString":{"type":"string"},"newString":{"type":"string"}}});
        let args = json!({"file_path":"a","old_string":"x","new_str":"y","extra":1});
        assert_eq!(
            Value::Object(rename_keys(args.as_object().unwrap(), &schema)),
            json!({"filePath":"a","oldString":"x","newString":"y","extra":1})
        );
        // A declared key written as declared is never displaced by a synonym.
        let args = json!({"path":"b","filePath":"a"});
        assert_eq!(
            Value::Object(rename_keys(args.as_object().unwrap(), &schema)),
            json!({"filePath":"a","path":"b"})
        );
        let args = json!({"anything":1});
        assert_eq!(
            Value::Object(rename_keys(args.as_object().unwrap(), &json!({}))),
            args
        );
    }
}
