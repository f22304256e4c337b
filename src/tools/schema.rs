//! The part of JSON Schema that tool parameter schemas use: `type` (one or several,
//! `integer` included), `properties`, `required`, `additionalProperties: false`, `enum`,
//! `items`, `anyOf`/`oneOf`. Other keywords (`$schema`, `description`, `default`,
//! formats…) are ignored: validation only has to catch arguments a client would reject.

use serde_json::Value;

/// Deepest nesting checked; deeper values are accepted unchecked.
const MAX_DEPTH: usize = 32;

/// The problems of `value` against `schema`; empty when it conforms.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, value, "arguments", 0, &mut problems);
    problems
}

/// Whether `schema` declares `key` among its properties.
pub fn has_property(schema: &Value, key: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(key))
}

fn check(schema: &Value, value: &Value, at: &str, depth: usize, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let fits = options.iter().any(|option| {
                let mut inner = Vec::new();
                check(option, value, at, depth + 1, &mut inner);
                inner.is_empty()
            });
            if !fits && !options.is_empty() {
                problems.push(format!("{at} matches none of the allowed shapes"));
            }
        }
    }
    if let Some(kinds) = schema.get("type") {
        let allowed: Vec<&str> = match kinds {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|kind| is_type(value, kind)) {
            problems.push(format!("{at} must be of type {}", allowed.join(" or ")));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            problems.push(format!(
                "{at} must be one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Value::Object(object) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(key) {
                    problems.push(format!("{at} is missing required property '{key}'"));
                }
            }
        }
        for (key, item) in object {
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, item, &format!("{at}.{key}"), depth + 1, problems),
                None => {
                    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                        problems.push(format!("{at} has unexpected property '{key}'"));
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(
                item_schema,
                item,
                &format!("{at}[{i}]"),
                depth + 1,
                problems,
            );
        }
    }
}

fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validates_what_tool_schemas_use() {
        let schema = json!({"$schema":"x","type":"object","properties":{
            "filePath":{"type":"string"},"limit":{"type":"integer"},"mode":{"enum":["a","b"]},
            "todos":{"type":"array","items":{"type":"object","required":["content"],"properties":{"content":{"type":"string"}}}},
            "either":{"anyOf":[{"type":"string"},{"type":"number"}]}},
            "required":["filePath"],"additionalProperties":false});
        assert!(
            validate(
                &schema,
                &json!({"filePath":"a","limit":3,"mode":"a","todos":[{"content":"x"}],"either":2})
            )
            .is_empty()
        );
        let problems = validate(
            &schema,
            &json!({"limit":1.5,"mode":"c","todos":[{}],"either":true,"extra":1}),
        );
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(!validate(&schema, &json!([1])).is_empty());
        assert!(validate(&json!({}), &json!({"anything":1})).is_empty());
    }

    #[test]
    fn deep_values_do_not_overflow() {
        let mut value = json!(1);
        let mut schema = json!({"type":"integer"});
        for _ in 0..500 {
            value = json!([value]);
            schema = json!({"type":"array","items":schema});
        }
        let _ = validate(&schema, &value);
    }
}
