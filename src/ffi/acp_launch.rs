//! `aw_acp_launch`: what to add to an ACP agent's launch so that its own tools are off
//! (the Rust [`launch_without_native_tools`] and its [`AgentLaunch`]), for a config with
//! `AW_NATIVE_TOOLS_OFF`.

use std::ffi::{CStr, CString, c_char};

use super::boundary::{
    Guarded, Handle, Out, boundary, call, free_handle, impl_handle, last_error, predicate,
};
use super::result::{Error, aw_result};
use super::views::aw_str;
use crate::acp::{AgentLaunch, launch_without_native_tools};

/// What to add to an ACP agent's launch so that its own tools are off: arguments to
/// append to its command line and, for some agents, a file of the adapter's own to write
/// and name on the command line after them. An opaque handle made by `aw_acp_launch_new`,
/// read with the `aw_acp_launch_*` functions and freed with `aw_acp_launch_free`.
///
/// With a file (`aw_acp_launch_has_file`), the adapter writes
/// `aw_acp_launch_file_contents` to a file named `aw_acp_launch_file_name` in a private
/// directory of its own, appends `aw_acp_launch_file_flag` and the file's path to the
/// agent's arguments, then each `aw_acp_launch_file_after`, and removes the file when the
/// agent is stopped for good.
///
/// Since ABI 1.4.
#[allow(non_camel_case_types)]
pub struct aw_acp_launch(Guarded<LaunchState>);
impl_handle!(aw_acp_launch, LaunchState);

/// The launch, with its strings NUL-terminated for C.
pub(crate) struct LaunchState {
    args: Vec<CString>,
    file: Option<FileState>,
}

/// The launch's file, its strings NUL-terminated.
struct FileState {
    name: CString,
    contents: CString,
    flag: CString,
    after: Vec<CString>,
}

/// A string of the launch as a C string: they come from the agent's command line and
/// environment, where a NUL byte cannot be, or from agentwire's own text.
fn c_string(text: &str) -> Result<CString, aw_result> {
    CString::new(text).map_err(|_| aw_result::InteriorNul)
}

/// Strings as C strings.
fn c_strings(list: &[String]) -> Result<Vec<CString>, aw_result> {
    list.iter().map(|text| c_string(text)).collect()
}

impl LaunchState {
    fn of(launch: AgentLaunch) -> Result<LaunchState, aw_result> {
        let args = c_strings(&launch.args)?;
        let file = match launch.file {
            None => None,
            Some(file) => Some(FileState {
                name: c_string(file.name)?,
                contents: c_string(&file.contents)?,
                flag: c_string(file.flag)?,
                after: c_strings(&file.after)?,
            }),
        };
        Ok(LaunchState { args, file })
    }

    fn file(&self) -> Result<&FileState, Error> {
        self.file
            .as_ref()
            .ok_or_else(|| Error::new(aw_result::NotAvailable, "this agent's launch has no file"))
    }
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
/// `gemini --acp` (a policy file of the adapter's own, `--policy`).
///
/// Parameters:
/// - `program`: the agent's program, NUL-terminated UTF-8.
/// - `args`, `args_count`: the agent's arguments, each NUL-terminated UTF-8 (`args` may be
///   NULL when `args_count` is 0).
/// - `envp`: the agent's environment, as `execve` takes it (`"NAME=value"` strings, the
///   array ended by NULL), or NULL for the environment of this process, which the agent
///   then inherits: read for Gemini CLI's `GEMINI_CLI_HOME` or else `HOME`, which say
///   where the user's own policies directory is (a value that is not UTF-8 counts as
///   unset).
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

/// Whether the launch has a file to write and name on the command line; false for NULL
/// or a poisoned launch.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_has_file(launch: *const aw_acp_launch) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(launch, false, |state| state.file.is_some()) }
}

/// One of the file's strings into `*out_value`: `AW_RESULT_OK`, or
/// `AW_RESULT_NOT_AVAILABLE` when there is no file.
///
/// # Safety
/// The pointer rules.
unsafe fn file_string(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
    field: fn(&FileState) -> &CStr,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            out.write(aw_str::of_c(field(state.file()?)));
            Ok(aw_result::Ok)
        })
    }
}

/// The file's name into `*out_value` (`"agentwire-native-tools-off.toml"` for Gemini CLI,
/// which reads the file by its extension): give the file this name in the adapter's
/// private directory.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_file_name(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { file_string(launch, out_value, |file| &file.name) }
}

/// What the file holds (UTF-8 text) into `*out_value`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_file_contents(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { file_string(launch, out_value, |file| &file.contents) }
}

/// The flag that names the file to the agent (`"--policy"` for Gemini CLI) into
/// `*out_value`: append it, then the file's path, after the launch's arguments.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_file_flag(
    launch: *const aw_acp_launch,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { file_string(launch, out_value, |file| &file.flag) }
}

/// How many arguments to append after the file's path, into `*out_count` (for Gemini CLI,
/// `--policy` and the user's own policies directory, which a `--policy` would otherwise
/// replace; none when the command line names policies itself).
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when there is no file.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_file_after_count(
    launch: *const aw_acp_launch,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_count, "out_count")?;
            out.write(state.file()?.after.len());
            Ok(aw_result::Ok)
        })
    }
}

/// The argument at `index` of those to append after the file's path (in order) into
/// `*out_value`.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INDEX_OUT_OF_RANGE`, or `AW_RESULT_NOT_AVAILABLE`
/// when there is no file.
///
/// Memory and lifetimes: NUL-terminated (at `data[len]`); valid until the launch is
/// freed.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_launch_file_after(
    launch: *const aw_acp_launch,
    index: usize,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(launch, |state| {
            let out = Out::new(out_value, "out_value")?;
            let after = &state.file()?.after;
            let arg = after.get(index).ok_or_else(|| {
                Error::new(
                    aw_result::IndexOutOfRange,
                    format!(
                        "index {index} is out of range (the file has {} arguments after it)",
                        after.len()
                    ),
                )
            })?;
            out.write(aw_str::of_c(arg));
            Ok(aw_result::Ok)
        })
    }
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
            assert!(!aw_acp_launch_has_file(launch));
            type Getter = unsafe extern "C" fn(*const aw_acp_launch, *mut aw_str) -> aw_result;
            let getters: [Getter; 3] = [
                aw_acp_launch_file_name,
                aw_acp_launch_file_contents,
                aw_acp_launch_file_flag,
            ];
            for getter in getters {
                assert_eq!(getter(launch, &mut view), aw_result::NotAvailable);
            }
            assert_eq!(
                aw_acp_launch_file_after_count(launch, &mut count),
                aw_result::NotAvailable
            );
            assert_eq!(
                aw_acp_launch_file_after(launch, 0, &mut view),
                aw_result::NotAvailable
            );
            let message = CStr::from_ptr(aw_acp_launch_last_error(launch));
            assert!(message.to_str().unwrap().contains("no file"), "{message:?}");
            aw_acp_launch_free(launch);
        }
    }

    /// A launch made with the environment `env` (`"NAME=value"` entries).
    fn new_in(program: &CStr, args: &[&CStr], env: &[&CStr]) -> *mut aw_acp_launch {
        let pointers: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let mut envp: Vec<*const c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        let mut launch = std::ptr::null_mut();
        // SAFETY: valid strings, arrays and out-pointer.
        let result = unsafe {
            aw_acp_launch_new(
                program.as_ptr(),
                pointers.as_ptr(),
                pointers.len(),
                envp.as_ptr(),
                &mut launch,
            )
        };
        assert_eq!(result, aw_result::Ok);
        launch
    }

    /// The arguments to append after the launch's file.
    fn after(launch: *const aw_acp_launch) -> Vec<String> {
        let mut count = usize::MAX;
        let mut view = aw_str::EMPTY;
        // SAFETY: a live launch and valid out-pointers.
        unsafe {
            assert_eq!(
                aw_acp_launch_file_after_count(launch, &mut count),
                aw_result::Ok
            );
            let list = (0..count)
                .map(|index| {
                    assert_eq!(
                        aw_acp_launch_file_after(launch, index, &mut view),
                        aw_result::Ok
                    );
                    string(view)
                })
                .collect();
            assert_eq!(
                aw_acp_launch_file_after(launch, count, &mut view),
                aw_result::IndexOutOfRange
            );
            list
        }
    }

    #[test]
    fn gemini_gets_a_policy_file_and_the_users_policies_after_it() {
        let launch = new_in(
            c"gemini",
            &[c"--acp"],
            &[c"HOMEX=/no", c"HOME=/home/u", c"PATH=/bin"],
        );
        let expected = launch_without_native_tools("gemini", &["--acp".to_owned()], &|name| {
            (name == "HOME").then(|| "/home/u".to_owned())
        })
        .unwrap()
        .file
        .unwrap();
        // SAFETY: a live launch and valid pointers.
        unsafe {
            let mut count = 1;
            assert_eq!(aw_acp_launch_arg_count(launch, &mut count), aw_result::Ok);
            assert_eq!(count, 0);
            assert!(aw_acp_launch_has_file(launch));
            let mut view = aw_str::EMPTY;
            assert_eq!(aw_acp_launch_file_name(launch, &mut view), aw_result::Ok);
            assert_eq!(string(view), "agentwire-native-tools-off.toml");
            assert_eq!(aw_acp_launch_file_flag(launch, &mut view), aw_result::Ok);
            assert_eq!(string(view), "--policy");
            assert_eq!(
                aw_acp_launch_file_contents(launch, &mut view),
                aw_result::Ok
            );
            assert_eq!(string(view), expected.contents);
            assert!(string(view).contains("decision = \"deny\""));
            assert_eq!(CStr::from_ptr(aw_acp_launch_last_error(launch)), c"");
            assert_eq!(after(launch), expected.after);
            assert_eq!(after(launch)[0], "--policy");
            assert!(
                after(launch)[1].starts_with("/home/u"),
                "{:?}",
                after(launch)
            );
            aw_acp_launch_free(launch);
        }
    }

    #[test]
    fn the_given_environment_names_the_users_policies() {
        let moved = new_in(
            c"gemini",
            &[c"--acp"],
            &[c"HOME=/home/u", c"GEMINI_CLI_HOME=/srv/g"],
        );
        assert!(after(moved)[1].starts_with("/srv/g"), "{:?}", after(moved));
        // No home: nothing to name after the file.
        let homeless = new_in(c"gemini", &[c"--acp"], &[]);
        assert_eq!(after(homeless), Vec::<String>::new());
        // Policies on the command line are the user's choice.
        let own = new_in(
            c"gemini",
            &[c"--acp", c"--policy", c"/etc/p.toml"],
            &[c"HOME=/home/u"],
        );
        assert_eq!(after(own), Vec::<String>::new());
        // SAFETY: live launches, each freed once.
        unsafe {
            aw_acp_launch_free(moved);
            aw_acp_launch_free(homeless);
            aw_acp_launch_free(own);
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
            assert!(!aw_acp_launch_has_file(claude));
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
            assert!(!aw_acp_launch_has_file(std::ptr::null()));
            aw_acp_launch_free(std::ptr::null_mut());
        }
        assert!(launch.is_null());
    }
}
