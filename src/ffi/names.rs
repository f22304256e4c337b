//! The C enums that number a core enum's values, and their names.
//!
//! A C enum (`aw_failure_kind`) is the core enum ([`FailureKind`](crate::event::FailureKind))
//! numbered in the order of the core's `ALL`, so the one table here per enum is the list
//! of its C values in that order ([`mirrors!`]); it must be as long as `ALL` to compile.
//! Its names are the core's (`aw_failure_kind_name`), and the enumerators of the header
//! spell them (`AW_FAILURE_KIND_USAGE_LIMIT`), which this module's tests check.

use std::ffi::{CStr, c_char};

use super::boundary::boundary_or;
use crate::names::Named;

/// A C enum standing for the values of a core enum.
pub(crate) trait CEnum: Copy + 'static {
    /// The core enum.
    type Core: Named;
    /// The C value of each of `Core::ALL`, in its order.
    const VALUES: &'static [Self];

    /// The C number.
    fn number(self) -> u32;

    /// The core value's name, NUL-terminated.
    fn c_name(core: Self::Core) -> &'static CStr;

    /// The C value of `core`.
    fn of(core: Self::Core) -> Self {
        let at = Self::Core::ALL
            .iter()
            .position(|value| *value == core)
            .expect("ALL holds every value");
        Self::VALUES[at]
    }

    /// The core value of a C number, if it is one.
    fn from_u32(number: u32) -> Option<Self::Core> {
        Self::VALUES
            .iter()
            .position(|value| value.number() == number)
            .map(|at| Self::Core::ALL[at])
    }
}

/// Declares a C enum's values for a core enum's, in the order of the core's `ALL`: the
/// C enum's own list, checked against the core's length when the crate compiles.
macro_rules! mirrors {
    ($c:ident => $core:ty { $($variant:ident),+ $(,)? }) => {
        impl $crate::ffi::names::CEnum for $c {
            type Core = $core;
            const VALUES: &'static [$c] = &[$($c::$variant),+];

            fn number(self) -> u32 {
                self as u32
            }

            fn c_name(core: $core) -> &'static ::std::ffi::CStr {
                core.c_name()
            }
        }

        const _: () = assert!(
            <$c as $crate::ffi::names::CEnum>::VALUES.len() == <$core>::ALL.len(),
            concat!(
                stringify!($c),
                " lists a value for each of ",
                stringify!($core),
                "::ALL, in its order"
            )
        );
    };
}
pub(crate) use mirrors;

/// The body of every `aw_*_name`: the name of a C number of `C`, or NULL for a number
/// that is none of its values.
pub(crate) fn name_of<C: CEnum>(number: u32) -> *const c_char {
    boundary_or(std::ptr::null(), || {
        C::from_u32(number).map_or(std::ptr::null(), |core| C::c_name(core).as_ptr())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FailureKind, ToolOutcome};
    use crate::ffi::acp_config::{aw_native_tools, aw_permission_choice};
    use crate::ffi::bridge::aw_dialect;
    use crate::ffi::config::{aw_reasoning_field, aw_tool_strategy};
    use crate::ffi::event::{
        aw_event_kind, aw_failure_kind, aw_finish_reason, aw_progress_kind, aw_tool_outcome,
    };
    use crate::ffi::registry::aw_fresh_reason;
    use crate::ffi::reply::aw_error_kind;
    use crate::ffi::result::aw_result;

    /// The enumerators of `enum <name>` in the committed header, with their values.
    fn header_enum(name: &str) -> Vec<(String, u32)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/agentwire.h");
        let header = std::fs::read_to_string(path).expect("the header is committed");
        let start = header
            .find(&format!("\nenum {name}\n"))
            .unwrap_or_else(|| panic!("the header declares enum {name}"));
        let body = &header[start..];
        let body = &body[..body.find("};").expect("the enum ends")];
        body.lines()
            .filter_map(|line| {
                let (enumerator, value) = line.trim().strip_suffix(',')?.split_once(" = ")?;
                Some((enumerator.to_owned(), value.parse().ok()?))
            })
            .collect()
    }

    /// The header's enumerator for a core name.
    fn enumerator(c_enum: &str, name: &str) -> String {
        format!("{c_enum}_{name}")
            .to_ascii_uppercase()
            .replace('-', "_")
    }

    /// The header's `enum <c_enum>` lists `extra` (C-only values), then the core's values
    /// in the order of `ALL`, spelled after their names, numbered as `C` numbers them.
    fn spells_the_core_names<C: CEnum>(c_enum: &str, extra: &[(&str, u32)]) {
        let mut expected: Vec<(String, u32)> = extra
            .iter()
            .map(|(name, number)| (enumerator(c_enum, name), *number))
            .collect();
        for (&core, &value) in C::Core::ALL.iter().zip(C::VALUES) {
            expected.push((enumerator(c_enum, core.name()), value.number()));
            assert_eq!(C::from_u32(value.number()), Some(core));
            assert_eq!(C::of(core).number(), value.number());
            assert_eq!(C::c_name(core).to_str(), Ok(core.name()));
        }
        let core = std::any::type_name::<C::Core>();
        assert_eq!(
            header_enum(c_enum),
            expected,
            "include/agentwire.h's {c_enum} against {}::ALL (regenerate the header with \
             AGENTWIRE_BLESS=1 cargo test --test header)",
            core.rsplit("::").next().unwrap_or(core)
        );
    }

    #[test]
    fn the_header_spells_every_core_name() {
        spells_the_core_names::<aw_error_kind>("aw_error_kind", &[]);
        spells_the_core_names::<aw_failure_kind>("aw_failure_kind", &[]);
        spells_the_core_names::<aw_finish_reason>("aw_finish_reason", &[]);
        spells_the_core_names::<aw_tool_outcome>("aw_tool_outcome", &[("none", 0)]);
        spells_the_core_names::<aw_progress_kind>("aw_progress_kind", &[]);
        spells_the_core_names::<aw_event_kind>("aw_event_kind", &[]);
        spells_the_core_names::<aw_dialect>("aw_dialect", &[]);
        spells_the_core_names::<aw_permission_choice>("aw_permission_choice", &[]);
        spells_the_core_names::<aw_native_tools>("aw_native_tools", &[]);
        spells_the_core_names::<aw_tool_strategy>("aw_tool_strategy", &[]);
        spells_the_core_names::<aw_reasoning_field>("aw_reasoning_field", &[]);
        spells_the_core_names::<aw_fresh_reason>("aw_fresh_reason", &[]);
    }

    #[test]
    fn the_header_spells_every_result_name() {
        let expected: Vec<(String, u32)> = aw_result::ALL
            .iter()
            .map(|r| (r.name().to_str().unwrap().to_owned(), *r as u32))
            .collect();
        assert_eq!(header_enum("aw_result"), expected);
    }

    #[test]
    fn names_are_null_for_numbers_that_are_no_value() {
        let name = |p: *const c_char| {
            // SAFETY: a non-NULL name is a static NUL-terminated string.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap())
        };
        let past_the_last = |count: usize| u32::try_from(count).unwrap();
        assert_eq!(name(name_of::<aw_failure_kind>(10)), Some("usage_limit"));
        let failure_kinds = past_the_last(FailureKind::ALL.len());
        assert_eq!(name(name_of::<aw_failure_kind>(failure_kinds)), None);
        assert_eq!(name(name_of::<aw_tool_outcome>(1)), Some("success"));
        // `AW_TOOL_OUTCOME_NONE` (0) comes first.
        let outcomes = past_the_last(ToolOutcome::ALL.len() + 1);
        assert_eq!(name(name_of::<aw_tool_outcome>(outcomes)), None);
        assert_eq!(name(name_of::<aw_tool_outcome>(u32::MAX)), None);
    }
}
