//! The part of JSON Schema that tool parameter schemas use, enough to tell whether a
//! client would accept a call's arguments.
//!
//! | keyword | checked |
//! |---|---|
//! | `type` | one name or an array of names; `integer` accepts `3` and `3.0` |
//! | `enum`, `const` | by JSON equality |
//! | `properties`, `required`, `additionalProperties` | `false`, or a schema for the extra keys |
//! | `items` (one schema, or an array: per position), `prefixItems`, `minItems`, `maxItems` | |
//! | `minLength`, `maxLength` | in characters |
//! | `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` | numeric form and draft-4 boolean form |
//! | `anyOf`, `allOf`, `oneOf` (exactly one), `not` | |
//! | `$ref` | local references only (`#/$defs/…`, `#/definitions/…`, `#`) |
//! | `nullable: true` | OpenAPI style: `null` is also accepted |
//! | `true` / `false` schemas | accept everything / nothing |
//!
//! Everything else (`$schema`, `description`, `default`, `format`, `pattern`, `title`…) is
//! ignored: validation catches arguments a client would reject, it does not have to be a
//! complete validator. It never panics and its work is bounded: nesting deeper than
//! [`MAX_DEPTH`] and checks beyond [`MAX_STEPS`] are accepted unchecked, and at most
//! [`MAX_PROBLEMS`] problems are reported.

use serde_json::{Map, Value};

/// Deepest nesting (of values and of schemas through `$ref`) checked.
pub const MAX_DEPTH: usize = 32;
/// Most schema/value pairs visited for one validation (bounds `anyOf` over `$ref` cycles).
pub const MAX_STEPS: usize = 100_000;
/// Most problems reported.
pub const MAX_PROBLEMS: usize = 20;

/// The problems of `value` against `schema`, as sentences naming the offending location
/// (`arguments.todos[0].content`); empty when it conforms.
#[must_use]
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    run(schema, value).0
}

/// Whether `value` conforms to `schema`.
#[must_use]
pub fn is_valid(schema: &Value, value: &Value) -> bool {
    run(schema, value).0.is_empty()
}

/// The problems of `value` against `schema`, and how many steps finding them took.
fn run(schema: &Value, value: &Value) -> (Vec<String>, usize) {
    let mut cx = Context {
        root: schema,
        steps: 0,
    };
    let mut problems = Vec::new();
    cx.check(schema, value, &Path::Root, 0, &mut problems);
    (problems, cx.steps)
}

/// Steps past which a test build panics: a budget that stopped holding fails its test
/// quickly instead of running for the 2^32 steps of a doubling schema.
#[cfg(test)]
const TEST_STEP_CEILING: usize = 2 * MAX_STEPS;

/// The declared properties of an object schema (`properties`), if any.
#[must_use]
pub fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// Whether `schema` declares `key` among its properties.
#[must_use]
pub fn has_property(schema: &Value, key: &str) -> bool {
    properties(schema).is_some_and(|p| p.contains_key(key))
}

/// The names `required` lists.
#[must_use]
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether the schema forbids keys it does not declare (`additionalProperties: false`).
#[must_use]
pub fn forbids_additional(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
}

/// The type names a schema allows (`type` as a string or an array); empty when it does
/// not say.
#[must_use]
pub fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Where a problem is, built only when a problem is reported.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn render(&self) -> String {
        match self {
            Path::Root => "arguments".to_owned(),
            Path::Key(parent, key) => format!("{}.{key}", parent.render()),
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

struct Context<'s> {
    root: &'s Value,
    steps: usize,
}

impl<'s> Context<'s> {
    fn check(
        &mut self,
        schema: &'s Value,
        value: &Value,
        at: &Path<'_>,
        depth: usize,
        problems: &mut Vec<String>,
    ) {
        self.steps += 1;
        #[cfg(test)]
        assert!(
            self.steps <= TEST_STEP_CEILING,
            "validation ran past its step budget"
        );
        if depth > MAX_DEPTH || self.steps > MAX_STEPS || problems.len() >= MAX_PROBLEMS {
            return;
        }
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                problems.push(format!("{} is not allowed", at.render()));
                return;
            }
            Value::Object(schema) => schema,
            // Not a schema: nothing to check against.
            _ => return,
        };
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            if let Some(resolved) = self.resolve(target) {
                self.check(resolved, value, at, depth + 1, problems);
            }
        }
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        self.check_combinators(schema, value, at, depth, problems);

        let allowed: Vec<&str> = match schema.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|kind| is_type(value, kind)) {
            problems.push(format!(
                "{} must be of type {} (got {})",
                at.render(),
                allowed.join(" or "),
                type_name(value)
            ));
            return;
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            if !options.iter().any(|option| json_eq(option, value)) {
                problems.push(format!(
                    "{} must be one of {}",
                    at.render(),
                    short(&Value::Array(options.clone()))
                ));
            }
        }
        if let Some(constant) = schema.get("const") {
            if !json_eq(constant, value) {
                problems.push(format!("{} must be {}", at.render(), short(constant)));
            }
        }
        match value {
            Value::Object(object) => self.check_object(schema, object, at, depth, problems),
            Value::Array(items) => self.check_array(schema, items, at, depth, problems),
            Value::String(text) => check_string(schema, text, at, problems),
            Value::Number(_) => check_number(schema, value, at, problems),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn check_combinators(
        &mut self,
        schema: &'s Map<String, Value>,
        value: &Value,
        at: &Path<'_>,
        depth: usize,
        problems: &mut Vec<String>,
    ) {
        if let Some(options) = schema.get("allOf").and_then(Value::as_array) {
            for option in options {
                self.check(option, value, at, depth + 1, problems);
            }
        }
        if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
            if !options.is_empty() && !options.iter().any(|o| self.fits(o, value, depth)) {
                problems.push(format!(
                    "{} matches none of the allowed shapes",
                    at.render()
                ));
            }
        }
        if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
            if !options.is_empty() {
                let mut fitting = 0;
                for option in options {
                    if self.fits(option, value, depth) {
                        fitting += 1;
                        if fitting > 1 {
                            break;
                        }
                    }
                }
                match fitting {
                    0 => problems.push(format!(
                        "{} matches none of the allowed shapes",
                        at.render()
                    )),
                    1 => {}
                    _ => problems.push(format!(
                        "{} matches more than one of the exclusive shapes",
                        at.render()
                    )),
                }
            }
        }
        if let Some(negated) = schema.get("not") {
            if self.fits(negated, value, depth) {
                problems.push(format!("{} matches a forbidden shape", at.render()));
            }
        }
    }

    /// Whether `value` fits `schema`, without reporting why not.
    fn fits(&mut self, schema: &'s Value, value: &Value, depth: usize) -> bool {
        let mut inner = Vec::new();
        self.check(schema, value, &Path::Root, depth + 1, &mut inner);
        inner.is_empty()
    }

    fn check_object(
        &mut self,
        schema: &'s Map<String, Value>,
        object: &Map<String, Value>,
        at: &Path<'_>,
        depth: usize,
        problems: &mut Vec<String>,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(key) && problems.len() < MAX_PROBLEMS {
                    problems.push(format!(
                        "{} is missing required property '{key}'",
                        at.render()
                    ));
                }
            }
        }
        let additional = schema.get("additionalProperties");
        for (key, item) in object {
            let here = Path::Key(at, key);
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => self.check(sub, item, &here, depth + 1, problems),
                None => match additional {
                    Some(Value::Bool(false)) if problems.len() < MAX_PROBLEMS => {
                        problems.push(format!("{} has unexpected property '{key}'", at.render()));
                    }
                    Some(extra @ Value::Object(_)) => {
                        self.check(extra, item, &here, depth + 1, problems);
                    }
                    _ => {}
                },
            }
        }
    }

    fn check_array(
        &mut self,
        schema: &'s Map<String, Value>,
        items: &[Value],
        at: &Path<'_>,
        depth: usize,
        problems: &mut Vec<String>,
    ) {
        let count = |key: &str| schema.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minItems") {
            if (items.len() as u64) < min {
                problems.push(format!("{} needs at least {min} items", at.render()));
            }
        }
        if let Some(max) = count("maxItems") {
            if items.len() as u64 > max {
                problems.push(format!("{} allows at most {max} items", at.render()));
            }
        }
        // Per-position schemas (`prefixItems`, or draft-4 `items: [...]`), then one schema
        // for the rest.
        let (positional, rest): (&[Value], Option<&Value>) =
            match (schema.get("prefixItems"), schema.get("items")) {
                (Some(Value::Array(prefix)), items) => (prefix, items),
                (None, Some(Value::Array(prefix))) => (prefix, schema.get("additionalItems")),
                (_, items) => (&[], items),
            };
        for (i, item) in items.iter().enumerate() {
            let sub = positional.get(i).or(rest);
            if let Some(sub) = sub {
                self.check(sub, item, &Path::Index(at, i), depth + 1, problems);
            }
            if problems.len() >= MAX_PROBLEMS || self.steps > MAX_STEPS {
                return;
            }
        }
    }

    /// A local reference: `#`, or a JSON pointer into the root schema.
    fn resolve(&self, target: &str) -> Option<&'s Value> {
        let pointer = target.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer)
    }
}

fn check_string(
    schema: &Map<String, Value>,
    text: &str,
    at: &Path<'_>,
    problems: &mut Vec<String>,
) {
    let limit = |key: &str| schema.get(key).and_then(Value::as_u64);
    let (min, max) = (limit("minLength"), limit("maxLength"));
    if min.is_none() && max.is_none() {
        return;
    }
    let length = text.chars().count() as u64;
    if let Some(min) = min.filter(|min| length < *min) {
        problems.push(format!("{} needs at least {min} characters", at.render()));
    }
    if let Some(max) = max.filter(|max| length > *max) {
        problems.push(format!("{} allows at most {max} characters", at.render()));
    }
}

fn check_number(
    schema: &Map<String, Value>,
    value: &Value,
    at: &Path<'_>,
    problems: &mut Vec<String>,
) {
    let Some(number) = value.as_f64() else {
        return;
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    // Draft 4 writes exclusivity as a boolean next to `minimum`/`maximum`.
    let flag = |key: &str| schema.get(key) == Some(&Value::Bool(true));
    if let Some(min) = bound("minimum") {
        if number < min || (flag("exclusiveMinimum") && number <= min) {
            problems.push(format!("{} must be at least {min}", at.render()));
        }
    }
    if let Some(max) = bound("maximum") {
        if number > max || (flag("exclusiveMaximum") && number >= max) {
            problems.push(format!("{} must be at most {max}", at.render()));
        }
    }
    if let Some(min) = bound("exclusiveMinimum") {
        if number <= min {
            problems.push(format!("{} must be greater than {min}", at.render()));
        }
    }
    if let Some(max) = bound("exclusiveMaximum") {
        if number >= max {
            problems.push(format!("{} must be less than {max}", at.render()));
        }
    }
}

/// Whether `value` is of the JSON Schema type `kind`; unknown type names accept anything.
#[must_use]
pub fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality where `1` equals `1.0`, as JSON Schema compares numbers by value.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| json_eq(value, other)))
        }
        _ => a == b,
    }
}

/// A value for a message, cut to a readable length.
fn short(value: &Value) -> String {
    const MAX: usize = 200;
    let text = value.to_string();
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
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
        assert!(
            problems.contains(&"arguments.todos[0] is missing required property 'content'".into()),
            "{problems:?}"
        );
        assert!(!validate(&schema, &json!([1])).is_empty());
        assert!(validate(&json!({}), &json!({"anything":1})).is_empty());
    }

    #[test]
    fn types_and_integers() {
        let nullable_string = json!({"type":["string","null"]});
        assert!(is_valid(&nullable_string, &json!(null)));
        assert!(is_valid(&nullable_string, &json!("x")));
        assert!(!is_valid(&nullable_string, &json!(1)));
        let integer = json!({"type":"integer"});
        assert!(is_valid(&integer, &json!(3)));
        assert!(is_valid(&integer, &json!(3.0)));
        assert!(!is_valid(&integer, &json!(3.5)));
        assert!(!is_valid(&integer, &json!("3")));
        assert!(is_valid(&json!({"type":"number"}), &json!(-0.5)));
        assert!(is_valid(&json!({"type":"whatever"}), &json!({})));
        assert!(is_valid(
            &json!({"type":"string","nullable":true}),
            &json!(null)
        ));
        assert!(!is_valid(&json!({"type":"string"}), &json!(null)));
    }

    #[test]
    fn opencode_numeric_bounds() {
        // The real OpenCode `bash.timeout` and `read.limit` schemas.
        let timeout = json!({"minimum": -9_007_199_254_740_991_i64, "exclusiveMinimum": 0,
            "type": "integer", "maximum": 9_007_199_254_740_991_i64});
        assert!(is_valid(&timeout, &json!(30000)));
        assert_eq!(
            validate(&timeout, &json!(0)),
            ["arguments must be greater than 0"]
        );
        let limit = json!({"minimum": 0, "type": "integer", "maximum": 9_007_199_254_740_991_i64});
        assert!(is_valid(&limit, &json!(0)));
        assert!(!is_valid(&limit, &json!(-1)));
        let draft4 =
            json!({"minimum": 1, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": true});
        assert!(!is_valid(&draft4, &json!(1)));
        assert!(is_valid(&draft4, &json!(2)));
        assert!(!is_valid(&draft4, &json!(5)));
    }

    #[test]
    fn strings_arrays_const() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","minLength":1,"maxLength":3},
            "tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string"}},
            "pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]},
            "old":{"type":"array","items":[{"type":"string"}],"additionalItems":false},
            "kind":{"const":"x"}}});
        assert!(is_valid(
            &schema,
            &json!({"name":"éé","tags":["a"],"pair":["a",1,true],"old":["a"],"kind":"x"})
        ));
        let problems = validate(
            &schema,
            &json!({"name":"","tags":[],"pair":[1,"a"],"old":["a",2],"kind":"y"}),
        );
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(!is_valid(&schema, &json!({"name":"abcd"})));
        assert!(!is_valid(&schema, &json!({"tags":["a","b","c"]})));
    }

    #[test]
    fn combinators_and_refs() {
        let one_of = json!({"oneOf":[{"type":"integer"},{"type":"number"}]});
        assert!(is_valid(&one_of, &json!(1.5)));
        assert!(!is_valid(&one_of, &json!(1)), "both fit: not exactly one");
        let all_of = json!({"allOf":[{"type":"string"},{"maxLength":2}]});
        assert!(is_valid(&all_of, &json!("ab")));
        assert!(!is_valid(&all_of, &json!("abc")));
        assert!(!is_valid(&json!({"not":{"type":"string"}}), &json!("a")));
        let refs = json!({"type":"object","properties":{"todo":{"$ref":"#/$defs/todo"}},
            "$defs":{"todo":{"type":"object","required":["content"]}}});
        assert!(is_valid(&refs, &json!({"todo":{"content":"x"}})));
        assert!(!is_valid(&refs, &json!({"todo":{}})));
        assert!(is_valid(&json!({"$ref":"#/nowhere"}), &json!(1)));
        assert!(is_valid(&json!(true), &json!(1)));
        assert!(!is_valid(&json!(false), &json!(1)));
        let extra = json!({"type":"object","additionalProperties":{"type":"integer"}});
        assert!(is_valid(&extra, &json!({"a":1})));
        assert!(!is_valid(&extra, &json!({"a":"1"})));
    }

    #[test]
    fn recursive_refs_are_bounded() {
        // Every level doubles the work without the step budget (2^32 steps to the depth
        // limit); with it, the validation stops just past the budget (the frames still on
        // the stack return at their next step) and accepts what it did not check.
        // (`oneOf` tries every branch; `anyOf` stops at the first that fits.)
        let schema = json!({"oneOf":[{"$ref":"#"},{"$ref":"#"}]});
        let (problems, steps) = run(&schema, &json!(1));
        assert_eq!(
            problems,
            ["arguments matches more than one of the exclusive shapes"]
        );
        assert!(
            (MAX_STEPS..=MAX_STEPS + 4 * MAX_DEPTH).contains(&steps),
            "{steps} steps"
        );
        // Nothing left unchecked when the budget is not reached.
        let small = json!({"anyOf":[{"type":"string"},{"type":"integer"}]});
        assert_eq!(run(&small, &json!(1)).1, 3);
        let tree =
            json!({"type":"object","properties":{"child":{"$ref":"#"}},"required":["child"]});
        assert!(!is_valid(&tree, &json!({"child":{"child":{}}})));
    }

    #[test]
    fn deep_values_do_not_overflow() {
        let mut value = json!(1);
        let mut schema = json!({"type":"integer"});
        for _ in 0..500 {
            value = json!([value]);
            schema = json!({"type":"array","items":schema});
        }
        // Deeper than MAX_DEPTH is accepted unchecked, without recursing further.
        let (problems, steps) = run(&schema, &value);
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(steps, MAX_DEPTH + 2);
        // Within the depth, a mismatch is still found.
        let mut wrong = json!("not an array");
        for _ in 0..MAX_DEPTH - 1 {
            wrong = json!([wrong]);
        }
        let mut schema = json!({"type":"array"});
        for _ in 0..MAX_DEPTH - 1 {
            schema = json!({"type":"array","items":schema});
        }
        assert_eq!(validate(&schema, &wrong).len(), 1);
    }

    #[test]
    fn problems_are_capped() {
        let schema = json!({"type":"array","items":{"type":"string"}});
        let value = Value::Array(vec![json!(1); 1000]);
        assert_eq!(validate(&schema, &value).len(), MAX_PROBLEMS);
    }
}
