//! `--model-alias GLOB=MODEL`: the model names clients send, mapped to the agent's.
//!
//! Claude Code asks for its own models by name (`claude-opus-5-5`, and a small fast model
//! for background work), Codex for OpenAI's; cursor-agent knows neither. The rules are
//! tried in the order given and the first whose glob matches the request's `model`
//! replaces it, before the request is parsed, so the bridge validates and runs the model
//! the rule names. A request whose model matches no rule is left as it is.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;

/// The `--model-alias` rules, in order.
#[derive(Debug, Clone, Default)]
pub struct ModelAliases {
    rules: Vec<(String, String)>,
}

impl ModelAliases {
    /// Reads `GLOB=MODEL` values: the glob takes `*` (any run of characters) and `?` (one
    /// character); the model is a name cursor-agent knows (`auto`, `gpt-5`, …).
    pub fn new(values: &[String]) -> Result<ModelAliases, String> {
        let mut rules = Vec::with_capacity(values.len());
        for value in values {
            let Some((glob, model)) = value.split_once('=') else {
                return Err(format!(
                    "--model-alias {value:?}: give GLOB=MODEL, such as 'claude-*=auto'"
                ));
            };
            let (glob, model) = (glob.trim(), model.trim());
            if glob.is_empty() || model.is_empty() || model.starts_with('-') {
                return Err(format!(
                    "--model-alias {value:?}: both the glob and the model must be given, \
                     and the model cannot start with '-'"
                ));
            }
            rules.push((glob.to_owned(), model.to_owned()));
        }
        Ok(ModelAliases { rules })
    }

    /// Whether no rule is set.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The model `requested` maps to: the first matching rule's, if any.
    pub fn resolve(&self, requested: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|(glob, _)| glob_matches(glob.as_bytes(), requested.as_bytes()))
            .map(|(_, model)| model.as_str())
    }

    /// The request body with its top-level `model` replaced by the alias's, or the body
    /// as it is when no rule matches (or it is not a JSON object with a string `model`:
    /// the bridge answers that with the dialect's 400).
    pub fn apply<'a>(&self, body: &'a [u8]) -> Cow<'a, [u8]> {
        if self.rules.is_empty() {
            return Cow::Borrowed(body);
        }
        // Every member but `model` is kept as its own text: nothing is re-encoded.
        let Ok(mut members) = serde_json::from_slice::<BTreeMap<&str, &RawValue>>(body) else {
            return Cow::Borrowed(body);
        };
        let Some(requested) = members
            .get("model")
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        else {
            return Cow::Borrowed(body);
        };
        let Some(model) = self.resolve(&requested) else {
            return Cow::Borrowed(body);
        };
        let model = serde_json::value::to_raw_value(model).expect("a string serializes");
        members.insert("model", &model);
        Cow::Owned(serde_json::to_vec(&members).expect("raw values serialize"))
    }
}

/// Whether `text` matches `glob` (`*` any run, `?` one byte of it): the usual greedy
/// match with one backtrack point, linear in practice.
fn glob_matches(glob: &[u8], text: &[u8]) -> bool {
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some(b'*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    g = sg + 1;
                    t = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliases(rules: &[&str]) -> ModelAliases {
        let values: Vec<String> = rules.iter().map(|r| (*r).to_owned()).collect();
        ModelAliases::new(&values).unwrap()
    }

    #[test]
    fn globs() {
        for (glob, text) in [
            ("claude-*", "claude-opus-5-5"),
            ("claude-*", "claude-"),
            ("*", ""),
            ("*haiku*", "claude-haiku-4-5"),
            ("gpt-?", "gpt-5"),
            ("a*b*c", "aXbYbZc"),
            ("exact", "exact"),
        ] {
            assert!(
                glob_matches(glob.as_bytes(), text.as_bytes()),
                "{glob} {text}"
            );
        }
        for (glob, text) in [
            ("claude-*", "gpt-5"),
            ("claude-*", "claude"),
            ("gpt-?", "gpt-55"),
            ("a*b*c", "aXbYbZ"),
            ("exact", "exactly"),
            ("", "x"),
        ] {
            assert!(
                !glob_matches(glob.as_bytes(), text.as_bytes()),
                "{glob} {text}"
            );
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let a = aliases(&["claude-*haiku*=composer-2.5", "claude-*=auto", "*=gpt-5"]);
        assert_eq!(a.resolve("claude-haiku-4-5"), Some("composer-2.5"));
        assert_eq!(a.resolve("claude-opus-5-5"), Some("auto"));
        assert_eq!(a.resolve("o3"), Some("gpt-5"));
        assert_eq!(aliases(&["claude-*=auto"]).resolve("gpt-5"), None);
    }

    #[test]
    fn bad_rules_are_refused() {
        for bad in ["claude-*", "=auto", "claude-*=", "claude-*=--force", " = "] {
            let err = ModelAliases::new(&[bad.to_owned()]).unwrap_err();
            assert!(err.contains("--model-alias"), "{err}");
        }
    }

    #[test]
    fn the_body_gets_the_alias_and_keeps_the_rest() {
        let a = aliases(&["claude-*=auto"]);
        let body = br#"{"model":"claude-opus-5-5","max_tokens":5,"messages":[{"role":"user","content":"h\u00e9"}],"stream":true}"#;
        let out = a.apply(body);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let mut expected: serde_json::Value = serde_json::from_slice(body).unwrap();
        expected["model"] = "auto".into();
        assert_eq!(value, expected);
        // Members other than the model keep their own text.
        assert!(String::from_utf8_lossy(&out).contains(r#""h\u00e9""#));
    }

    #[test]
    fn bodies_without_a_matching_string_model_are_untouched() {
        let a = aliases(&["claude-*=auto"]);
        for body in [
            &br#"{"model":"gpt-5","messages":[]}"#[..],
            br#"{"model":5}"#,
            br#"{"messages":[]}"#,
            br#"[1,2]"#,
            b"not json",
            b"",
        ] {
            assert!(matches!(a.apply(body), Cow::Borrowed(b) if b == body));
        }
        assert!(matches!(
            ModelAliases::default().apply(b"{}"),
            Cow::Borrowed(_)
        ));
    }
}
