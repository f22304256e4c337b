//! The model catalogue: what `cursor-agent models` prints, read by the core's
//! `cursor::parse_models` and handed over as one JSON array of the package's `ModelEntry`
//! objects (`id`, `name`, `isDefault`, `isCurrent`).

use agentwire::cursor::{ModelEntry, parse_models as core_parse_models};
use serde::Serialize;
use wasm_bindgen::prelude::wasm_bindgen;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsModel<'a> {
    id: &'a str,
    name: &'a str,
    is_default: bool,
    is_current: bool,
}

impl<'a> From<&'a ModelEntry> for JsModel<'a> {
    fn from(entry: &'a ModelEntry) -> Self {
        JsModel {
            id: &entry.id,
            name: &entry.name,
            is_default: entry.is_default,
            is_current: entry.is_current,
        }
    }
}

/// The entries of a model listing (the bytes `cursor-agent models` wrote), in listing
/// order, as a JSON array. Never fails: what is not an entry is skipped.
#[wasm_bindgen(js_name = parseModels)]
pub fn parse_models(listing: &[u8]) -> String {
    let entries = core_parse_models(listing);
    let models: Vec<JsModel<'_>> = entries.iter().map(JsModel::from).collect();
    serde_json::to_string(&models).expect("serialising strings and booleans cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_becomes_the_packages_entries() {
        let listing = b"Available models\n\nauto - Auto (current, default)\ngpt-5 - GPT-5\n\nTip: use --model <id>\n";
        let json: serde_json::Value = serde_json::from_str(&parse_models(listing)).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"id": "auto", "name": "Auto", "isDefault": true, "isCurrent": true},
                {"id": "gpt-5", "name": "GPT-5", "isDefault": false, "isCurrent": false},
            ])
        );
        assert_eq!(parse_models(b"no models here"), "[]");
    }
}
