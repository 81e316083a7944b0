//! The names a client sees for the servers' tools and prompts.
//!
//! Invariants:
//! 1. Under [`ToolNames::Qualified`] an item is shown by its qualified name; under
//!    [`ToolNames::Original`] by its server's own name, unless another server lists
//!    the same name: then each of them is shown qualified.
//! 2. A shown name names one item: [`find`] gives the item a shown name stands for.

use std::collections::HashMap;

use mcp_runtime::config::ToolNames;

/// One server's item: its server, its own name and its qualified name.
pub(crate) struct Item<'a> {
    pub(crate) server: &'a str,
    pub(crate) raw: &'a str,
    pub(crate) qualified: &'a str,
}

/// The shown name of each of `items`, in their order (invariant 1).
pub(crate) fn shown<'a>(items: &[Item<'a>], names: ToolNames) -> Vec<&'a str> {
    if names == ToolNames::Qualified {
        return items.iter().map(|item| item.qualified).collect();
    }
    let mut listed = HashMap::<&str, usize>::new();
    for item in items {
        *listed.entry(item.raw).or_default() += 1;
    }
    items
        .iter()
        .map(|item| {
            if listed[item.raw] == 1 {
                item.raw
            } else {
                tracing::debug!(
                    name = item.raw,
                    server = item.server,
                    "a name more than one server lists is shown qualified"
                );
                item.qualified
            }
        })
        .collect()
}

/// The index of the item of `items` shown as `name`, if any (invariant 2).
pub(crate) fn find(items: &[Item<'_>], names: ToolNames, name: &str) -> Option<usize> {
    shown(items, names).iter().position(|shown| *shown == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<Item<'static>> {
        vec![
            Item {
                server: "a",
                raw: "search",
                qualified: "mcp__a__search",
            },
            Item {
                server: "a",
                raw: "only_a",
                qualified: "mcp__a__only_a",
            },
            Item {
                server: "b",
                raw: "search",
                qualified: "mcp__b__search",
            },
        ]
    }

    #[test]
    fn original_names_are_shown_unless_two_servers_share_them() {
        assert_eq!(
            shown(&items(), ToolNames::Original),
            ["mcp__a__search", "only_a", "mcp__b__search"]
        );
        assert_eq!(
            shown(&items(), ToolNames::Qualified),
            ["mcp__a__search", "mcp__a__only_a", "mcp__b__search"]
        );
        assert_eq!(find(&items(), ToolNames::Original, "only_a"), Some(1));
        assert_eq!(find(&items(), ToolNames::Original, "search"), None);
        assert_eq!(
            find(&items(), ToolNames::Original, "mcp__b__search"),
            Some(2)
        );
        assert_eq!(find(&items(), ToolNames::Qualified, "only_a"), None);
    }
}
