//! `aw_acp_launch`: what to add to an ACP agent's launch so that its own tools are off
//! (the Rust [`launch_without_native_tools`] and its [`AgentLaunch`]), for a config with
//! `AW_NATIVE_TOOLS_OFF`.

use std::ffi::{CStr, CString, c_char};

use super::boundary::{
    Guarded, Handle, Out, boundary, call, call_mut, free_handle, impl_handle, input_optional_bytes,
    last_error, predicate,
};
use super::result::{Error, aw_result};
use super::views::aw_str;
use crate::acp::{AgentLaunch, LaunchError, SettingsFile, launch_without_native_tools};

/// What to add to an ACP agent's launch so that its own tools are off: arguments to
/// append to its command line and, for some agents, a settings file to write and name to
/// the agent in its environment. An opaque handle made by `aw_acp_launch_new`, read with
/// the `aw_acp_launch_*` functions and freed with `aw_acp_launch_free`.
///
/// With a settings file, the adapter reads the file it replaces
/// (`aw_acp_launch_settings_replaces`) if it exists, writes
/// `aw_acp_launch_settings_contents` of its bytes to a file of its own (in a directory of
/// its own), sets the variable `aw_acp_launch_settings_env` to that file's path in the
/// agent's environment, and removes the file when the agent is gone.
///
/// Since ABI 1.4.
#[allow(non_camel_case_types)]
pub struct aw_acp_launch(Guarded<LaunchState>);
impl_handle!(aw_acp_launch, LaunchState);

/// The launch, with its strings NUL-terminated for C.
pub(crate) struct LaunchState {
    args: Vec<CString>,
    settings: Option<SettingsState>,
}

/// A settings file, its strings NUL-terminated, and the contents last made.
struct SettingsState {
    file: SettingsFile,
    env: CString,
    replaces: CString,
    contents: CString,
}

/// A string of the launch as a C string: they come from the agent's command line and
/// environment, where a NUL byte cannot be.
fn c_string(text: &str) -> Result<CString, aw_result> {
    CString::new(text).map_err(|_| aw_result::InteriorNul)
}

impl LaunchState {
    fn of(launch: AgentLaunch) -> Result<LaunchState, aw_result> {
        let args = launch
            .args
            .iter()
            .map(|arg| c_string(arg))
            .collect::<Result<_, _>>()?;
        let settings = match launch.settings {
            None => None,
            Some(file) => Some(SettingsState {
                env: c_string(file.env)?,
                replaces: c_string(&file.replaces)?,
                contents: CString::default(),
                file,
            }),
        };
        Ok(LaunchState { args, settings })
    }
}

fn no_settings() -> Error {
    Error::new(
        aw_result::NotAvailable,
        "this agent's launch has no settings file",
    )
}

/// A NUL-terminated C string argument, read as UTF-8.
///
/// # Safety
/// `text` is NULL or a readable NUL-terminated string, unchanged during the call.
unsafe fn input_c_str<'a>(text: *const c_char) -> Result<&'a str, aw_result> {
    if text.is_null() {
        return Err(aw_result::NullParameter);
    }
    // SAFETY: not NULL; NUL-terminated and readable per this function's contract.
    let text = unsafe { CStr::from_ptr(text) };
    text.to_str().map_err(|_| aw_result::InvalidUtf8)
}

/// Says what to add to the launch of the ACP agent `program` `args` so that its own tools
/// are off, writing it to `*out_launch`. The agent is recognised by the file name of its
/// program or of an argument (as in `npx @zed-industries/codex-acp`): claude-agent-acp
/// (nothing to add: its tools are turned off per session), codex-acp (`-c` overrides),
/// `gemini --acp` (a system-defaults settings file).
///
/// Parameters:
/// - `program`: the agent's program, NUL-terminated UTF-8.
/// - `args`, `args_count`: the agent's arguments, each NUL-terminated UTF-8 (`args` may be
///   NULL when `args_count` is 0).
/// - `envp`: the agent's environment, as `execve` takes it (`"NAME=value"` strings, the
///   array ended by NULL), or NULL for the environment of this process, which the agent
///   then inherits: read for Gemini CLI's `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` and
///   `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, which say which settings file the new one
///   replaces (a value that is not UTF-8 counts as unset).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_UNKNOWN_AGENT` (agentwire knows no way to turn
/// this agent's tools off, cursor-agent among them: keep them, `AW_NATIVE_TOOLS_KEEP`),
/// `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`, `AW_RESULT_INVALID_UTF8`.
/// No launch exists to hold a message: the result says what was wrong.
///
/// Memory and lifetimes: the inputs are read during the call only. The caller owns the
/// new launch and frees it with `aw_acp_launch_free`.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_new(
    program: *const c_char,
    args: *const *const c_char,
    args_count: usize,
    envp: *const *const c_char,
    out_launch: *mut *mut aw_acp_launch,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_launch` is NULL or writable, `program` and each
        // of the `args_count` pointers at `args` NULL or NUL-terminated strings, `envp`
        // NULL or an array of NUL-terminated strings ended by NULL.
        let made = unsafe {
            (|| -> Result<_, aw_result> {
                let out = Out::new(out_launch, "out_launch").map_err(|e| e.code)?;
                let program = input_c_str(program)?;
                if args_count > isize::MAX as usize / std::mem::size_of::<*const c_char>() {
                    return Err(aw_result::LengthTooLarge);
                }
                let list: &[*const c_char] = if args_count == 0 {
                    &[]
                } else if args.is_null() {
                    return Err(aw_result::NullParameter);
                } else {
                    std::slice::from_raw_parts(args, args_count)
                };
                let list = list
                    .iter()
                    .map(|&arg| input_c_str(arg).map(str::to_owned))
                    .collect::<Result<Vec<_>, _>>()?;
                let given = if envp.is_null() {
                    None
                } else {
                    let mut entries = Vec::new();
                    let mut at = envp;
                    while !(*at).is_null() {
                        entries.push(CStr::from_ptr(*at).to_bytes());
                        at = at.add(1);
                    }
                    Some(entries)
                };
                Ok((out, program, list, given))
            })()
        };
        let (out, program, list, given) = match made {
            Ok(made) => made,
            Err(code) => return code,
        };
        let environment = |name: &str| match &given {
            None => std::env::var(name).ok(),
            Some(entries) => entries.iter().find_map(|entry| {
                let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
                std::str::from_utf8(value).ok().map(str::to_owned)
            }),
        };
        let launch = match launch_without_native_tools(program, &list, &environment) {
            Ok(launch) => launch,
            Err(_) => return aw_result::UnknownAgent,
        };
        match LaunchState::of(launch) {
            Ok(state) => {
                out.write(aw_acp_launch::into_raw(state));
                aw_result::Ok
            }
            Err(code) => code,
        }
    })
}

/// Frees a launch. NULL does nothing.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_free(launch: *mut aw_acp_launch) {
    // SAFETY: the pointer rules: `launch` is NULL or a live launch, freed once.
    unsafe { free_handle(launch) }
}

/// The message of the last call on `launch` that failed, NUL-terminated; `""` when none
/// failed or `launch` is NULL.
///
/// Memory and lifetimes: valid until the next call on `launch` or its free.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_last_error(launch: *const aw_acp_launch) -> *const c_char {
    // SAFETY: the pointer rules: `launch` is NULL or a live launch.
    unsafe { last_error(launch) }
}

/// How many arguments to append to the agent's command line, into `*out_count`.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_arg_count(
    launch: *const aw_acp_launch,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            Out::new(out_count, "out_count")?.write(state.args.len());
            Ok(aw_result::Ok)
        })
    }
}

/// The argument at `index` (in the order to append them) into `*out_value`.
///
/// Returns `AW_RESULT_OK` or `AW_RESULT_INDEX_OUT_OF_RANGE`.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_arg(
    launch: *const aw_acp_launch,
    index: usize,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            let arg = state.args.get(index).ok_or_else(|| {
                Error::new(
                    aw_result::IndexOutOfRange,
                    format!(
                        "argument index {index} is out of range (there are {})",
                        state.args.len()
                    ),
                )
            })?;
            out.write(aw_str::of_c(arg));
            Ok(aw_result::Ok)
        })
    }
}

/// Whether the launch has a settings file to write; false for NULL or a poisoned launch.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_has_settings(launch: *const aw_acp_launch) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(launch, false, |state| state.settings.is_some()) }
}

/// The environment variable that names the settings file to the agent
/// (`"GEMINI_CLI_SYSTEM_DEFAULTS_PATH"`), into `*out_value`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no settings file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_settings_env(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            Ok(out.write_optional(state.settings.as_ref().map(|s| aw_str::of_c(&s.env))))
        })
    }
}

/// The path of the file the settings file stands for, whose settings it keeps, into
/// `*out_value`: the file the agent reads when the variable is not set. Read it, if it
/// exists, for `aw_acp_launch_settings_contents`; never write it.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no settings file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_settings_replaces(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            Ok(out.write_optional(state.settings.as_ref().map(|s| aw_str::of_c(&s.replaces))))
        })
    }
}

/// The settings file's contents into `*out_value`: the settings of the file it replaces,
/// with the added ones written over them.
///
/// Parameters:
/// - `replaced`, `replaced_len`: the bytes of the replaced file; NULL (with length 0) when
///   it does not exist.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_NOT_AVAILABLE` when there is no settings file;
/// `AW_RESULT_BAD_SETTINGS` when `replaced` is not a JSON object (the last error says
/// why: fix or remove that file, or keep the agent's tools); `AW_RESULT_NULL_PARAMETER`,
/// `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `replaced` is read during the call only. The contents are UTF-8
/// JSON, NUL-terminated (at `data[len]`), valid until the next call of this function on
/// `launch` or its free.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_settings_contents(
    launch: *mut aw_acp_launch,
    replaced: *const u8,
    replaced_len: usize,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            let replaced = input_optional_bytes(replaced, replaced_len, "replaced")?;
            let settings = state.settings.as_mut().ok_or_else(no_settings)?;
            let contents = settings.file.contents(replaced).map_err(launch_error)?;
            // JSON text escapes every control character, NUL among them.
            settings.contents = CString::new(contents)
                .map_err(|_| Error::new(aw_result::InteriorNul, "the settings hold a NUL byte"))?;
            out.write(aw_str::of_c(&settings.contents));
            Ok(aw_result::Ok)
        })
    }
}

/// A launch failure as a C failure with its message.
fn launch_error(error: LaunchError) -> Error {
    let code = match error {
        LaunchError::UnknownAgent(_) => aw_result::UnknownAgent,
        LaunchError::BadSettings { .. } => aw_result::BadSettings,
    };
    Error::new(code, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(view: aw_str) -> String {
        // SAFETY: a view the launch handed out, still valid.
        let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.len) };
        // The terminator is there, as documented.
        // SAFETY: `len` bytes then a NUL, per the getters' documentation.
        assert_eq!(unsafe { *view.data.add(view.len) }, 0);
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn new(program: &CStr, args: &[&CStr]) -> Result<*mut aw_acp_launch, aw_result> {
        let pointers: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let mut launch = std::ptr::null_mut();
        // SAFETY: valid strings and out-pointer.
        let result = unsafe {
            aw_acp_launch_new(
                program.as_ptr(),
                pointers.as_ptr(),
                pointers.len(),
                std::ptr::null(),
                &mut launch,
            )
        };
        if result == aw_result::Ok {
            Ok(launch)
        } else {
            assert!(launch.is_null());
            Err(result)
        }
    }

    #[test]
    fn codex_gets_its_arguments_and_no_file() {
        let launch = new(c"/opt/bin/codex-acp", &[]).unwrap();
        let mut count = 0;
        // SAFETY: a live launch and valid out-pointers, here and below.
        unsafe {
            assert_eq!(aw_acp_launch_arg_count(launch, &mut count), aw_result::Ok);
            let expected = launch_without_native_tools("codex-acp", &[], &|_| None)
                .unwrap()
                .args;
            assert_eq!(count, expected.len());
            let mut view = aw_str::EMPTY;
            for (index, arg) in expected.iter().enumerate() {
                assert_eq!(aw_acp_launch_arg(launch, index, &mut view), aw_result::Ok);
                assert_eq!(&string(view), arg);
            }
            assert_eq!(
                aw_acp_launch_arg(launch, count, &mut view),
                aw_result::IndexOutOfRange
            );
            assert!(!aw_acp_launch_has_settings(launch));
            assert_eq!(
                aw_acp_launch_settings_env(launch, &mut view),
                aw_result::NotAvailable
            );
            assert_eq!(
                aw_acp_launch_settings_replaces(launch, &mut view),
                aw_result::NotAvailable
            );
            assert_eq!(
                aw_acp_launch_settings_contents(launch, std::ptr::null(), 0, &mut view),
                aw_result::NotAvailable
            );
            aw_acp_launch_free(launch);
        }
    }

    #[test]
    fn gemini_gets_a_file_merged_over_the_one_it_replaces() {
        let launch = new(c"gemini", &[c"--acp"]).unwrap();
        // SAFETY: a live launch and valid pointers.
        unsafe {
            let mut count = 1;
            assert_eq!(aw_acp_launch_arg_count(launch, &mut count), aw_result::Ok);
            assert_eq!(count, 0);
            assert!(aw_acp_launch_has_settings(launch));
            let mut view = aw_str::EMPTY;
            assert_eq!(aw_acp_launch_settings_env(launch, &mut view), aw_result::Ok);
            assert_eq!(string(view), "GEMINI_CLI_SYSTEM_DEFAULTS_PATH");
            assert_eq!(
                aw_acp_launch_settings_replaces(launch, &mut view),
                aw_result::Ok
            );
            assert!(string(view).ends_with("system-defaults.json"));
            assert_eq!(
                aw_acp_launch_settings_contents(launch, std::ptr::null(), 0, &mut view),
                aw_result::Ok
            );
            assert_eq!(string(view), r#"{"tools":{"core":[]}}"#);
            let kept = br#"{"ui":{"theme":"dark"},"tools":{"core":["ls"]}}"#;
            assert_eq!(
                aw_acp_launch_settings_contents(launch, kept.as_ptr(), kept.len(), &mut view),
                aw_result::Ok
            );
            let merged: serde_json::Value = serde_json::from_str(&string(view)).unwrap();
            assert_eq!(
                merged,
                serde_json::json!({"ui":{"theme":"dark"},"tools":{"core":[]}})
            );
            assert_eq!(CStr::from_ptr(aw_acp_launch_last_error(launch)), c"");
            let bad = b"[1]";
            assert_eq!(
                aw_acp_launch_settings_contents(launch, bad.as_ptr(), bad.len(), &mut view),
                aw_result::BadSettings
            );
            let message = CStr::from_ptr(aw_acp_launch_last_error(launch));
            assert!(
                message.to_str().unwrap().contains("system-defaults.json"),
                "{message:?}"
            );
            assert_eq!(
                aw_acp_launch_settings_contents(launch, std::ptr::null(), 3, &mut view),
                aw_result::NullParameter
            );
            aw_acp_launch_free(launch);
        }
    }

    #[test]
    fn a_given_environment_names_the_replaced_file() {
        let env = [
            c"HOME=/home/u".as_ptr(),
            c"GEMINI_CLI_SYSTEM_DEFAULTS_PATH_X=/no".as_ptr(),
            c"GEMINI_CLI_SYSTEM_DEFAULTS_PATH=/srv/defaults.json".as_ptr(),
            std::ptr::null(),
        ];
        let args = [c"--acp".as_ptr()];
        let mut launch = std::ptr::null_mut();
        // SAFETY: valid strings, arrays and out-pointers; the launch freed once.
        unsafe {
            assert_eq!(
                aw_acp_launch_new(
                    c"gemini".as_ptr(),
                    args.as_ptr(),
                    1,
                    env.as_ptr(),
                    &mut launch
                ),
                aw_result::Ok
            );
            let mut view = aw_str::EMPTY;
            assert_eq!(
                aw_acp_launch_settings_replaces(launch, &mut view),
                aw_result::Ok
            );
            assert_eq!(string(view), "/srv/defaults.json");
            aw_acp_launch_free(launch);
            // An empty environment: the platform's file.
            let empty = [std::ptr::null()];
            assert_eq!(
                aw_acp_launch_new(
                    c"gemini".as_ptr(),
                    args.as_ptr(),
                    1,
                    empty.as_ptr(),
                    &mut launch
                ),
                aw_result::Ok
            );
            assert_eq!(
                aw_acp_launch_settings_replaces(launch, &mut view),
                aw_result::Ok
            );
            assert!(string(view).ends_with("system-defaults.json"));
            assert_ne!(string(view), "/srv/defaults.json");
            aw_acp_launch_free(launch);
        }
    }

    #[test]
    fn unknown_agents_and_bad_arguments_are_refused() {
        assert_eq!(
            new(c"cursor-agent", &[c"acp"]).unwrap_err(),
            aw_result::UnknownAgent
        );
        assert_eq!(new(c"gemini", &[]).unwrap_err(), aw_result::UnknownAgent);
        let claude = new(c"claude-agent-acp", &[]).unwrap();
        // SAFETY: live, then freed once.
        unsafe {
            let mut count = 1;
            assert_eq!(aw_acp_launch_arg_count(claude, &mut count), aw_result::Ok);
            assert_eq!(count, 0);
            assert!(!aw_acp_launch_has_settings(claude));
            aw_acp_launch_free(claude);
        }
        let not_utf8 = c"codex-acp\xff";
        assert_eq!(new(not_utf8, &[]).unwrap_err(), aw_result::InvalidUtf8);
        assert_eq!(
            new(c"npx", &[c"x", not_utf8]).unwrap_err(),
            aw_result::InvalidUtf8
        );
        let mut launch = std::ptr::null_mut();
        // SAFETY: NULL where the function must refuse it, without reading anything.
        unsafe {
            assert_eq!(
                aw_acp_launch_new(
                    std::ptr::null(),
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    &mut launch
                ),
                aw_result::NullParameter
            );
            assert_eq!(
                aw_acp_launch_new(
                    c"codex-acp".as_ptr(),
                    std::ptr::null(),
                    1,
                    std::ptr::null(),
                    &mut launch
                ),
                aw_result::NullParameter
            );
            assert_eq!(
                aw_acp_launch_new(
                    c"codex-acp".as_ptr(),
                    std::ptr::null(),
                    usize::MAX,
                    std::ptr::null(),
                    &mut launch
                ),
                aw_result::LengthTooLarge
            );
            assert_eq!(
                aw_acp_launch_new(
                    c"codex-acp".as_ptr(),
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut()
                ),
                aw_result::NullParameter
            );
            let mut count = 0;
            assert_eq!(
                aw_acp_launch_arg_count(std::ptr::null(), &mut count),
                aw_result::NullParameter
            );
            assert!(!aw_acp_launch_has_settings(std::ptr::null()));
            aw_acp_launch_free(std::ptr::null_mut());
        }
        assert!(launch.is_null());
    }
}
