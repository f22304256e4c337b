//! `aw_result`: what every fallible C function returns.

use std::borrow::Cow;
use std::ffi::{CStr, c_char};

use super::boundary::boundary_or;

/// The outcome of a C function.
///
/// Values are grouped: 7000–7099 are statuses (not failures), 7100–7199 caller misuse,
/// 7200–7299 bad input. A value is never reused for another meaning; retired values stay
/// listed as comments.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_result {
    // Statuses.
    /// Success. Out-parameters were written.
    Ok = 7000,
    /// Nothing to poll until the next input (the Rust API's `None`). Out-parameters were not
    /// written.
    Drained = 7001,
    /// The value asked for is not known (yet), such as a session id before the agent sent
    /// one. Out-parameters were not written.
    NotAvailable = 7002,
    /// The request was rejected, so there is no agent to run: drain the bridge's outputs
    /// (the error head, its body, the end). Out-parameters were not written.
    Rejected = 7003,

    // Caller misuse.
    /// A required pointer was NULL (or a data pointer was NULL with a non-zero length).
    NullParameter = 7100,
    /// agentwire panicked inside this call (a bug in agentwire). The handle is poisoned.
    Panic = 7101,
    /// An earlier call on this handle panicked; the handle can only be freed.
    Poisoned = 7102,
    /// A length is larger than any object can be (over `PTRDIFF_MAX`).
    LengthTooLarge = 7103,
    /// An index is past the end of the list it indexes.
    IndexOutOfRange = 7104,
    /// An enum argument is not one of its type's values.
    InvalidEnum = 7105,
    /// The agent's output was pushed after it was reported exited.
    AfterExit = 7106,
    /// The agent was reported exited twice.
    ExitedTwice = 7107,
    /// Stdout was pushed to a decoder after its end (`aw_decoder_push_eof`).
    AfterEof = 7108,
    /// The handle is in use by another call (from another thread): calls on one handle
    /// must not overlap, and this one did nothing. Nothing was written and the handle's
    /// last error is left to the call in progress. The program has a race to fix:
    /// serialise the handle's calls.
    Busy = 7109,
    /// A turn number that the ACP connection never handed out (ABI 1.1).
    UnknownTurn = 7110,
    /// A bridge gave its place in a conversation back to another registry than the one it
    /// was made in: nothing was done (ABI 1.3).
    WrongRegistry = 7111,
    /// An MCP exchange number that the MCP server never handed out (ABI 1.3).
    UnknownExchange = 7112,
    /// An MCP call number that the MCP server never handed out (ABI 1.3).
    UnknownCall = 7113,
    /// The MCP call was answered, cancelled or dropped already (ABI 1.3). Last added.
    CallNotPending = 7114,

    // Bad input.
    /// A string argument is not valid UTF-8.
    InvalidUtf8 = 7200,
    /// A string argument that becomes part of a command line or environment contains a NUL
    /// byte.
    InteriorNul = 7201,
    /// A request to the MCP endpoint names no session's MCP server: answer it 404, with no
    /// body (ABI 1.3).
    McpNotFound = 7202,
    /// A request to the MCP endpoint does not present its server's secret: answer it 401,
    /// with no body (ABI 1.3).
    McpUnauthorized = 7203,
    /// A request body is not a valid request of its dialect; the last error says why
    /// (ABI 1.3).
    InvalidRequest = 7204,
    /// An MCP session id is not 1 or more visible ASCII characters (ABI 1.3).
    InvalidSessionId = 7205,
    /// The command is no ACP agent whose own tools agentwire knows how to turn off
    /// (ABI 1.4). Last added.
    UnknownAgent = 7206,
}

impl aw_result {
    /// Every value, in order.
    pub const ALL: [aw_result; 26] = [
        aw_result::Ok,
        aw_result::Drained,
        aw_result::NotAvailable,
        aw_result::Rejected,
        aw_result::NullParameter,
        aw_result::Panic,
        aw_result::Poisoned,
        aw_result::LengthTooLarge,
        aw_result::IndexOutOfRange,
        aw_result::InvalidEnum,
        aw_result::AfterExit,
        aw_result::ExitedTwice,
        aw_result::AfterEof,
        aw_result::Busy,
        aw_result::UnknownTurn,
        aw_result::WrongRegistry,
        aw_result::UnknownExchange,
        aw_result::UnknownCall,
        aw_result::CallNotPending,
        aw_result::InvalidUtf8,
        aw_result::InteriorNul,
        aw_result::McpNotFound,
        aw_result::McpUnauthorized,
        aw_result::InvalidRequest,
        aw_result::InvalidSessionId,
        aw_result::UnknownAgent,
    ];

    /// The value's name as the header spells it, NUL-terminated.
    pub fn name(self) -> &'static CStr {
        match self {
            aw_result::Ok => c"AW_RESULT_OK",
            aw_result::Drained => c"AW_RESULT_DRAINED",
            aw_result::NotAvailable => c"AW_RESULT_NOT_AVAILABLE",
            aw_result::Rejected => c"AW_RESULT_REJECTED",
            aw_result::NullParameter => c"AW_RESULT_NULL_PARAMETER",
            aw_result::Panic => c"AW_RESULT_PANIC",
            aw_result::Poisoned => c"AW_RESULT_POISONED",
            aw_result::LengthTooLarge => c"AW_RESULT_LENGTH_TOO_LARGE",
            aw_result::IndexOutOfRange => c"AW_RESULT_INDEX_OUT_OF_RANGE",
            aw_result::InvalidEnum => c"AW_RESULT_INVALID_ENUM",
            aw_result::AfterExit => c"AW_RESULT_AFTER_EXIT",
            aw_result::ExitedTwice => c"AW_RESULT_EXITED_TWICE",
            aw_result::AfterEof => c"AW_RESULT_AFTER_EOF",
            aw_result::Busy => c"AW_RESULT_BUSY",
            aw_result::UnknownTurn => c"AW_RESULT_UNKNOWN_TURN",
            aw_result::WrongRegistry => c"AW_RESULT_WRONG_REGISTRY",
            aw_result::UnknownExchange => c"AW_RESULT_UNKNOWN_EXCHANGE",
            aw_result::UnknownCall => c"AW_RESULT_UNKNOWN_CALL",
            aw_result::CallNotPending => c"AW_RESULT_CALL_NOT_PENDING",
            aw_result::InvalidUtf8 => c"AW_RESULT_INVALID_UTF8",
            aw_result::InteriorNul => c"AW_RESULT_INTERIOR_NUL",
            aw_result::McpNotFound => c"AW_RESULT_MCP_NOT_FOUND",
            aw_result::McpUnauthorized => c"AW_RESULT_MCP_UNAUTHORIZED",
            aw_result::InvalidRequest => c"AW_RESULT_INVALID_REQUEST",
            aw_result::InvalidSessionId => c"AW_RESULT_INVALID_SESSION_ID",
            aw_result::UnknownAgent => c"AW_RESULT_UNKNOWN_AGENT",
        }
    }

    /// The value for a raw number, if it is one.
    pub fn from_u32(value: u32) -> Option<aw_result> {
        aw_result::ALL.into_iter().find(|r| *r as u32 == value)
    }
}

/// A failed call: its code and the message kept on the handle for
/// `aw_*_last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) code: aw_result,
    pub(crate) message: Cow<'static, str>,
}

impl Error {
    pub(crate) fn new(code: aw_result, message: impl Into<Cow<'static, str>>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &'static str) -> Error {
        Error::new(
            aw_result::NullParameter,
            format!("`{what}` is NULL but must not be"),
        )
    }
}

impl From<crate::bridge::BridgeError> for Error {
    fn from(error: crate::bridge::BridgeError) -> Error {
        use crate::bridge::BridgeError;
        let code = match error {
            BridgeError::AfterExit => aw_result::AfterExit,
            BridgeError::ExitedTwice => aw_result::ExitedTwice,
        };
        Error::new(code, error.to_string())
    }
}

impl From<crate::cursor::DecoderError> for Error {
    fn from(error: crate::cursor::DecoderError) -> Error {
        use crate::cursor::DecoderError;
        let code = match error {
            DecoderError::AfterEof => aw_result::AfterEof,
        };
        Error::new(code, error.to_string())
    }
}

/// The name of a result value (`"AW_RESULT_OK"`, …), or `"AW_RESULT_UNKNOWN"` for a
/// number that is not one.
///
/// Memory and lifetimes: the returned string is static and NUL-terminated; do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn aw_result_name(result: u32) -> *const c_char {
    boundary_or(c"AW_RESULT_UNKNOWN".as_ptr(), || {
        aw_result::from_u32(result)
            .map_or(c"AW_RESULT_UNKNOWN", aw_result::name)
            .as_ptr()
    })
}

/// Whether `result` is a status (7000–7099: success, or "nothing now"), as opposed to a
/// failure (caller misuse or bad input).
#[unsafe(no_mangle)]
pub extern "C" fn aw_result_is_status(result: u32) -> bool {
    boundary_or(false, || (7000..7100).contains(&result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_values_and_groups() {
        for result in aw_result::ALL {
            assert_eq!(aw_result::from_u32(result as u32), Some(result));
            let name = result.name().to_str().unwrap();
            assert!(name.starts_with("AW_RESULT_"), "{name}");
            let group = result as u32 / 100;
            assert!((70..=72).contains(&group), "{name}");
        }
        assert_eq!(aw_result::from_u32(0), None);
        assert_eq!(aw_result::from_u32(7099), None);
    }
}
