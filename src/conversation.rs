//! The conversation a request carries, in no dialect's terms: who said what, the tool calls
//! made and what they returned, the tools the client offers and what it allows the next
//! reply to do.
//!
//! A request dialect parses into a [`Conversation`] ([`openai::request`] does for Chat
//! Completions bodies); everything downstream reads only this: the tool plan
//! ([`tools::ToolPlan`]), the loop guard ([`tools::loop_guard`]) and the prompt
//! ([`openai::prompt`]). A second request dialect is therefore one new parser.
//!
//! [`openai::request`]: crate::openai::request
//! [`openai::prompt`]: crate::openai::prompt
//! [`tools::ToolPlan`]: crate::tools::ToolPlan
//! [`tools::loop_guard`]: crate::tools::loop_guard

use serde_json::Value;

/// One request's conversation and the client's tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The client's tools.
    pub tools: Vec<ToolSpec>,
    /// Which tools the next reply may or must call.
    pub tool_choice: ToolChoice,
    /// Whether the next reply may call several tools at once.
    pub parallel_tool_calls: bool,
}

impl Default for Conversation {
    /// No messages, no tools, `tool_choice` none, parallel calls allowed.
    fn default() -> Self {
        Conversation {
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
            parallel_tool_calls: true,
        }
    }
}

impl Conversation {
    /// The current turn: the messages after the last [`Role::User`] message (all of them
    /// when there is none). What the agent did since the user last spoke.
    #[must_use]
    pub fn current_turn(&self) -> &[Message] {
        let start = self
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |at| at + 1);
        &self.messages[start..]
    }
}

/// A message author.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// System instructions.
    System,
    /// Developer instructions (a newer name for system instructions).
    Developer,
    /// The user.
    User,
    /// The assistant: text, tool calls, or both.
    Assistant,
    /// A tool result.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text; empty when there is none.
    pub content: String,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<HistoryToolCall>,
    /// For a tool result: the call it answers.
    pub tool_call_id: Option<String>,
    /// Optional author name.
    pub name: Option<String>,
}

/// A tool call in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryToolCall {
    /// Call id, as the client knows it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the JSON text sent.
    pub arguments: String,
}

/// A client tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Function name.
    pub name: String,
    /// Description (may be empty).
    pub description: String,
    /// JSON Schema of the arguments (`{}` when absent).
    pub parameters: Value,
}

/// Which tools the next reply may or must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// No tools: the agent answers itself.
    None,
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Named(String),
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A message with only a role and text.
    pub(crate) fn message(role: Role, content: &str) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn the_current_turn_starts_after_the_last_user_message() {
        let mut conversation = Conversation {
            messages: vec![
                message(Role::System, "s"),
                message(Role::Assistant, "a0"),
                message(Role::User, "u1"),
                message(Role::Assistant, "a1"),
                message(Role::User, "u2"),
                message(Role::Assistant, "a2"),
                message(Role::Tool, "t2"),
            ],
            ..Conversation::default()
        };
        let contents: Vec<&str> = conversation
            .current_turn()
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(contents, ["a2", "t2"]);
        conversation.messages.push(message(Role::User, "u3"));
        assert!(conversation.current_turn().is_empty());
        conversation.messages.retain(|m| m.role != Role::User);
        assert_eq!(conversation.current_turn().len(), 5, "no user message: all");
    }
}
