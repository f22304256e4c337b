//! Which client tool a cursor tool is, and how its arguments are called there.
//!
//! Names and keys are compared *normalised*: lower case, letters and digits only, so
//! `filePath`, `file_path` and `FilePath` are one key, and `web_fetch` is `webfetch`.
//!
//! **Tool names.** A client tool is found for a cursor tool kind by, in order: the kind's
//! own name, then each of its client names below.
//!
//! | cursor kind | client names tried | mutating |
//! |---|---|---|
//! | `shell` | bash, shell, terminal, run_command, execute_command, run_terminal_command | no¹ |
//! | `read` | read, read_file, view, cat | no |
//! | `grep` | grep, search, rg, search_files | no |
//! | `glob` | glob, find_files, file_search | no |
//! | `ls` | list, ls, list_directory, list_dir | no |
//! | `webFetch` | webfetch, web_fetch, fetch | no |
//! | `webSearch` | websearch, web_search | no |
//! | `edit` | edit, str_replace, edit_file | yes |
//! | `write` | write, write_file, create_file | yes |
//! | `delete` | rm, delete, delete_file, remove | yes |
//! | `updateTodos` | todowrite, update_todos, todo_write | yes |
//! | `task` | task, delegate, subagent | yes |
//! | `mcp` | — (never mapped) | yes |
//!
//! ¹ The agent never runs a shell command in read-only (`--mode ask`) runs; the call is
//! handed to the client, which runs it as `bash`.
//!
//! A name the model writes in a text envelope resolves the same way: exact client name,
//! then normalised client name, then through the table (`shell` → `bash`, `ls` → `list`,
//! `updateTodos` → `todowrite`, `delete` → `rm`, …).
//!
//! **Argument keys.** Each cursor argument goes to the first key of its group that the
//! client's schema declares (matched normalised); keys in no group, or whose group the
//! schema lacks, are dropped (cursor's `toolCallId`, `simpleCommands`, `parsingResult`,
//! `hasInputRedirect`, … never reach the client); empty strings are dropped.
//!
//! | group (first declared wins) |
//! |---|
//! | filePath, file_path, path, file, filename, target_file |
//! | command, cmd |
//! | workdir, cwd, working_directory, workingDirectory, directory |
//! | pattern, globPattern, glob_pattern, regex, query |
//! | query, searchTerm, search_term |
//! | content, contents, streamContent, text |
//! | oldString, old_string · newString, new_string · replaceAll, replace_all |
//! | url · timeout · offset · limit · todos · description · include · ignore |
//!
//! `path` belongs to the file group, but a schema that declares `path` (a directory, for
//! `glob`/`grep`/`list`) gets it as `path`: an exact key always wins over its group.

/// A cursor tool kind's client names, and whether running it changes anything.
struct KindEntry {
    kind: &'static str,
    names: &'static [&'static str],
    mutating: bool,
}

const KINDS: &[KindEntry] = &[
    KindEntry {
        kind: "shell",
        names: &[
            "bash",
            "shell",
            "terminal",
            "run_command",
            "execute_command",
            "run_terminal_command",
        ],
        mutating: false,
    },
    KindEntry {
        kind: "read",
        names: &["read", "read_file", "view", "cat"],
        mutating: false,
    },
    KindEntry {
        kind: "grep",
        names: &["grep", "search", "rg", "search_files"],
        mutating: false,
    },
    KindEntry {
        kind: "glob",
        names: &["glob", "find_files", "file_search"],
        mutating: false,
    },
    KindEntry {
        kind: "ls",
        names: &["list", "ls", "list_directory", "list_dir"],
        mutating: false,
    },
    KindEntry {
        kind: "webFetch",
        names: &["webfetch", "web_fetch", "fetch"],
        mutating: false,
    },
    KindEntry {
        kind: "webSearch",
        names: &["websearch", "web_search"],
        mutating: false,
    },
    KindEntry {
        kind: "edit",
        names: &["edit", "str_replace", "edit_file"],
        mutating: true,
    },
    KindEntry {
        kind: "write",
        names: &["write", "write_file", "create_file"],
        mutating: true,
    },
    KindEntry {
        kind: "delete",
        names: &["rm", "delete", "delete_file", "remove"],
        mutating: true,
    },
    KindEntry {
        kind: "updateTodos",
        names: &["todowrite", "update_todos", "todo_write"],
        mutating: true,
    },
    KindEntry {
        kind: "task",
        names: &["task", "delegate", "subagent"],
        mutating: true,
    },
];

/// Argument key groups; see the module docs.
const KEY_GROUPS: &[&[&str]] = &[
    &[
        "filePath",
        "file_path",
        "path",
        "file",
        "filename",
        "target_file",
    ],
    &["command", "cmd"],
    &[
        "workdir",
        "cwd",
        "working_directory",
        "workingDirectory",
        "directory",
    ],
    &["pattern", "globPattern", "glob_pattern", "regex", "query"],
    &["query", "searchTerm", "search_term"],
    &["content", "contents", "streamContent", "text"],
    &["oldString", "old_string"],
    &["newString", "new_string"],
    &["replaceAll", "replace_all"],
    &["url"],
    &["timeout"],
    &["offset"],
    &["limit"],
    &["todos"],
    &["description"],
    &["include"],
    &["ignore"],
];

/// Lower case, letters and digits only.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether a cursor tool kind changes files or state (never intercepted as a native call).
/// Unknown kinds (MCP tools and future ones) count as mutating.
pub fn is_mutating(kind: &str) -> bool {
    KINDS
        .iter()
        .find(|entry| entry.kind == kind)
        .is_none_or(|entry| entry.mutating)
}

/// The cursor kinds whose client names include `client_name` (normalised match).
pub fn kind_of_client_tool(client_name: &str) -> Option<&'static str> {
    let wanted = normalise(client_name);
    KINDS
        .iter()
        .find(|entry| {
            normalise(entry.kind) == wanted || entry.names.iter().any(|n| normalise(n) == wanted)
        })
        .map(|entry| entry.kind)
}

/// Finds the client tool for a cursor kind among `offered` names.
pub fn client_tool_for_kind<'a>(kind: &str, offered: &[&'a str]) -> Option<&'a str> {
    let entry = KINDS.iter().find(|entry| entry.kind == kind)?;
    std::iter::once(entry.kind)
        .chain(entry.names.iter().copied())
        .find_map(|candidate| {
            offered
                .iter()
                .find(|name| normalise(name) == normalise(candidate))
                .copied()
        })
}

/// Resolves a tool name the model wrote: exact, normalised, then through the kind table.
pub fn resolve_name<'a>(name: &str, offered: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = offered.iter().find(|o| **o == name) {
        return Some(exact);
    }
    let wanted = normalise(name);
    if let Some(close) = offered.iter().find(|o| normalise(o) == wanted) {
        return Some(close);
    }
    let kind = kind_of_client_tool(name)?;
    client_tool_for_kind(kind, offered)
}

/// The schema key a cursor argument key goes to, or `None` to drop it.
pub fn target_key(key: &str, declared: &[&str]) -> Option<String> {
    if let Some(exact) = declared.iter().find(|d| **d == key) {
        return Some((*exact).to_owned());
    }
    let wanted = normalise(key);
    if let Some(close) = declared.iter().find(|d| normalise(d) == wanted) {
        return Some((*close).to_owned());
    }
    KEY_GROUPS
        .iter()
        .filter(|group| group.iter().any(|k| normalise(k) == wanted))
        .find_map(|group| {
            group
                .iter()
                .find_map(|k| declared.iter().find(|d| normalise(d) == normalise(k)))
        })
        .map(|d| (*d).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(client_tool_for_kind("delete", &["rm"]), Some("rm"));
    }

    #[test]
    fn names_the_model_writes() {
        assert_eq!(resolve_name("write", OPENCODE), Some("write"));
        assert_eq!(resolve_name("Web_Fetch", OPENCODE), Some("webfetch"));
        assert_eq!(resolve_name("shell", OPENCODE), Some("bash"));
        assert_eq!(resolve_name("updateTodos", OPENCODE), Some("todowrite"));
        assert_eq!(resolve_name("write_file", OPENCODE), Some("write"));
        assert_eq!(resolve_name("launch_missiles", OPENCODE), None);
    }

    #[test]
    fn keys() {
        assert_eq!(
            target_key("path", &["filePath", "offset"]),
            Some("filePath".into())
        );
        assert_eq!(
            target_key("path", &["pattern", "path"]),
            Some("path".into())
        );
        assert_eq!(
            target_key("workingDirectory", &["command", "workdir"]),
            Some("workdir".into())
        );
        assert_eq!(
            target_key("globPattern", &["pattern", "path"]),
            Some("pattern".into())
        );
        assert_eq!(
            target_key("old_string", &["oldString"]),
            Some("oldString".into())
        );
        assert_eq!(target_key("toolCallId", &["command"]), None);
        assert!(is_mutating("edit") && is_mutating("mcp") && !is_mutating("read"));
    }
}
