//! The inputs a bridge and an ACP connection take alike, from the agent process and the
//! clock: the same exports, each a checked time and one call into the core object.

/// Adds the shared inputs to the raw type `$raw`, whose core object (a `Bridge` or an
/// `acp::Connection`) is its field `$field`: `pushStdout`, `pushStderr`,
/// `agentExitedCode`, `agentExitedSignal`, `handleTimeout` and `shutdown`.
macro_rules! agent_inputs {
    ($raw:ident, $field:ident) => {
        #[wasm_bindgen::prelude::wasm_bindgen]
        impl $raw {
            /// Agent stdout, in any chunking.
            #[wasm_bindgen(js_name = pushStdout)]
            pub fn push_stdout(
                &mut self,
                data: &[u8],
                now_ms: f64,
            ) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                Ok(self.$field.push_stdout(data, now_ms)?)
            }

            /// Agent stderr, in any chunking.
            #[wasm_bindgen(js_name = pushStderr)]
            pub fn push_stderr(
                &mut self,
                data: &[u8],
                now_ms: f64,
            ) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                Ok(self.$field.push_stderr(data, now_ms)?)
            }

            /// The agent exited with `code`.
            #[wasm_bindgen(js_name = agentExitedCode)]
            pub fn agent_exited_code(
                &mut self,
                code: i32,
                now_ms: f64,
            ) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                let status = agentwire::cursor::ExitStatus::Code(code);
                Ok(self.$field.agent_exited(status, now_ms)?)
            }

            /// A signal (by number) ended the agent.
            #[wasm_bindgen(js_name = agentExitedSignal)]
            pub fn agent_exited_signal(
                &mut self,
                signal: i32,
                now_ms: f64,
            ) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                let status = agentwire::cursor::ExitStatus::Signal(signal);
                Ok(self.$field.agent_exited(status, now_ms)?)
            }

            /// A deadline from `pollTimeout` passed.
            #[wasm_bindgen(js_name = handleTimeout)]
            pub fn handle_timeout(&mut self, now_ms: f64) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                self.$field.handle_timeout(now_ms);
                Ok(())
            }

            /// The program is shutting down.
            pub fn shutdown(&mut self, now_ms: f64) -> Result<(), $crate::error::RawError> {
                let now_ms = $crate::error::millis(now_ms, "nowMs")?;
                self.$field.shutdown(now_ms);
                Ok(())
            }
        }
    };
}

pub(crate) use agent_inputs;
