//! Errors thrown to JavaScript.

use agentwire::acp::ConnectionError;
use agentwire::bridge::BridgeError;
use agentwire::cursor::DecoderError;
use wasm_bindgen::prelude::wasm_bindgen;

use crate::names::CamelCase;

/// Why a call failed: the TypeScript layer's `AgentwireError.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Misuse: an argument of the wrong type or out of range, an unknown option.
    InvalidArgument,
    /// Bad input: a value whose content cannot be used (a NUL in a path, text that is not
    /// Unicode).
    InvalidInput,
    /// Misuse the core reports (`BridgeError`, `ConnectionError`, `DecoderError`), by the
    /// error's name (`after_exit`, `exited_twice`, `after_eof`): the code is that name in
    /// camelCase, so every error the core may add has its own code.
    Misuse(&'static str),
}

impl Code {
    fn to_js(self) -> String {
        match self {
            Code::InvalidArgument => "invalidArgument".to_owned(),
            Code::InvalidInput => "invalidInput".to_owned(),
            Code::Misuse(name) => CamelCase(name).to_string(),
        }
    }
}

/// A failed call: its code and the library's message. The TypeScript layer turns it into
/// an `AgentwireError` (and frees it).
#[wasm_bindgen]
#[derive(Debug)]
pub struct RawError {
    code: Code,
    message: String,
}

#[wasm_bindgen]
impl RawError {
    /// `invalidArgument`, `invalidInput`, `afterExit`, `exitedTwice` or `afterEof`.
    #[wasm_bindgen(getter)]
    pub fn code(&self) -> String {
        self.code.to_js()
    }

    /// What went wrong, in the library's words.
    #[wasm_bindgen(getter)]
    pub fn message(&self) -> String {
        self.message.clone()
    }
}

impl RawError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> RawError {
        RawError {
            code,
            message: message.into(),
        }
    }

    #[cfg(test)]
    pub(crate) fn code_value(&self) -> Code {
        self.code
    }
}

impl From<BridgeError> for RawError {
    fn from(error: BridgeError) -> RawError {
        RawError::new(Code::Misuse(error.name()), error.to_string())
    }
}

impl From<ConnectionError> for RawError {
    fn from(error: ConnectionError) -> RawError {
        RawError::new(Code::Misuse(error.name()), error.to_string())
    }
}

impl From<DecoderError> for RawError {
    fn from(error: DecoderError) -> RawError {
        RawError::new(Code::Misuse(error.name()), error.to_string())
    }
}

/// A time on the caller's millisecond clock: finite and not negative; a fraction (from
/// `performance.now()`) is dropped.
pub(crate) fn millis(value: f64, what: &str) -> Result<u64, RawError> {
    if value.is_finite() && value >= 0.0 {
        // `as` saturates: a time past u64::MAX ms is u64::MAX.
        Ok(value as u64)
    } else {
        Err(RawError::new(
            Code::InvalidArgument,
            // The value itself is not quoted: formatting a float would link the float
            // printing machinery into the module (15 KB) for an error message.
            format!("{what} must be a finite, non-negative number of milliseconds"),
        ))
    }
}
