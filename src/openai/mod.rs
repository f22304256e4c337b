//! The OpenAI Chat Completions dialect.
