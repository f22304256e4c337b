//! The stable names of the enums whose values cross a binding: each enum's names are
//! written once, beside its declaration, and the C ABI, the Python and JavaScript packages
//! and the examples spell their own names from them.
//!
//! Every such enum ([`ErrorKind`](crate::api::ErrorKind),
//! [`FailureKind`](crate::event::FailureKind), [`Dialect`](crate::bridge::Dialect), …) has:
//! - `ALL`: every value, in declaration order, which is also the order of the C ABI's
//!   numbers for it (checked when the crate compiles): a new value goes last;
//! - `name()`: its stable name, lower case with `_` between words (`usage_limit`), unless
//!   the value is named after something that has a spelling of its own (a dialect is named
//!   after its API: `chat-completions`);
//! - [`FromStr`](std::str::FromStr), the inverse of `name()`, failing with [`UnknownName`];
//! - the [`Named`] trait, for code generic over them.
//!
//! The bindings derive their spellings: the C header's enumerators are the name upper-cased
//! with `_` for `-` after the type's prefix (`AW_FAILURE_KIND_USAGE_LIMIT`), and so are the
//! Python package's members (`FailureKind.USAGE_LIMIT`); the JavaScript package's names are
//! camelCase (`usageLimit`). Where a binding must write its list out (the C header's enum,
//! the TypeScript union types, the Python enums), a test compares it with `ALL`.

use std::fmt;

/// An enum whose values have stable names (see the [module](self) documentation).
pub trait Named: Copy + Eq + fmt::Debug + 'static {
    /// What a value is, in words (`failure kind`), for messages.
    const WHAT: &'static str;
    /// Every value, in declaration order (the order of the C ABI's numbers).
    const ALL: &'static [Self];
    /// The value's stable name.
    fn name(self) -> &'static str;
}

/// A name that is none of its enum's: what `FromStr` fails with for every [`Named`] enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?} (one of: {})", .expected.join(", "))]
pub struct UnknownName {
    /// What the name should have named (`failure kind`).
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// Every name there is, in the order of the enum's `ALL`.
    pub expected: &'static [&'static str],
}

/// Gives a fieldless enum its names: `ALL`, `name()`, `FromStr` and [`Named`], from one
/// list of `Variant => "name"` pairs in declaration order. A variant left out of the list
/// does not compile (the name's `match` is exhaustive), and neither does a list out of
/// declaration order.
macro_rules! named {
    ($ty:ident, $what:literal { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order, which is the order of the C ABI's numbers
            /// for them: a new value goes last. See [`crate::names`].
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            const NAMES: &'static [&'static str] = &[$($name),+];

            /// The value's stable name, which the bindings spell theirs from; the
            /// [`FromStr`](std::str::FromStr) implementation reads it back. See
            /// [`crate::names`].
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            /// The name, NUL-terminated, for the C ABI.
            #[cfg(feature = "capi")]
            #[allow(dead_code)]
            pub(crate) const fn c_name(self) -> &'static ::std::ffi::CStr {
                match self {
                    $($ty::$variant => const {
                        match ::std::ffi::CStr::from_bytes_with_nul(
                            concat!($name, "\0").as_bytes(),
                        ) {
                            Ok(name) => name,
                            Err(_) => panic!("a name holds a NUL byte"),
                        }
                    }),+
                }
            }
        }

        // `ALL` is in declaration order, so a value's position in it is its number.
        const _: () = {
            let mut i = 0;
            while i < $ty::ALL.len() {
                assert!(
                    $ty::ALL[i] as usize == i,
                    concat!(stringify!($ty), "'s names are not in declaration order")
                );
                i += 1;
            }
        };

        impl ::std::str::FromStr for $ty {
            type Err = $crate::names::UnknownName;

            fn from_str(name: &str) -> Result<$ty, $crate::names::UnknownName> {
                $ty::ALL
                    .iter()
                    .copied()
                    .find(|value| value.name() == name)
                    .ok_or_else(|| $crate::names::UnknownName {
                        what: $what,
                        name: name.to_owned(),
                        expected: $ty::NAMES,
                    })
            }
        }

        impl $crate::names::Named for $ty {
            const WHAT: &'static str = $what;
            const ALL: &'static [$ty] = $ty::ALL;

            fn name(self) -> &'static str {
                $ty::name(self)
            }
        }
    };
}
pub(crate) use named;
