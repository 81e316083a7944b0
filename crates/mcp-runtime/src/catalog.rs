//! The tool catalog: the names the model sees, and the way back to server and tool.
//!
//! A tool is exposed as `mcp__SERVER__TOOL`, with every character outside
//! `[A-Za-z0-9_-]` replaced by `_`, in at most [`MAX_TOOL_NAME_LEN`] characters. When that
//! name is too long, or when two tools would get the same name, each affected tool is
//! instead named by its (shortened) name plus `_` and a hash of its server and raw tool
//! name. The rule depends only on the set of tools, never on the order in which
//! servers answered, so the same servers and tools give the same names in every run;
//! [`Catalog::resolve`] routes a qualified name back to its server and raw tool name.

use std::collections::{BTreeMap, HashMap, HashSet, btree_map::Entry};

use rmcp::model::Tool;
use sha2::{Digest, Sha256};

/// The longest tool name the model is shown.
pub const MAX_TOOL_NAME_LEN: usize = 64;
const PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
/// Hex digits of the hash suffix; doubled once if two hashed names still collide.
const HASH_LEN: usize = 8;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QualifiedTool {
    /// The qualified name, `mcp__SERVER__TOOL` or its shortened, hashed form.
    pub qualified_name: String,
    /// The server that provides it.
    pub server: String,
    /// The tool as the server listed it (its raw name is `tool.name`).
    pub tool: Tool,
}

/// The qualified tools of every server, with a reverse index.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<QualifiedTool>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// Qualifies the tools of each server. Tools are listed in qualified-name order.
    pub fn build<'a>(servers: impl IntoIterator<Item = (&'a str, &'a [Tool])>) -> Self {
        // Sorted by (server, raw name), so the order of servers and of tools cannot
        // change a name; of two tools with one name on one server, the first listed
        // is kept, as in a listing (`connection::listing`).
        let mut entries: BTreeMap<(&str, &str), &Tool> = BTreeMap::new();
        for (server, tools) in servers {
            for tool in tools {
                match entries.entry((server, tool.name.as_ref())) {
                    Entry::Vacant(entry) => {
                        entry.insert(tool);
                    }
                    Entry::Occupied(_) => {
                        tracing::warn!(server, tool = %tool.name, "server listed a tool twice; keeping the first");
                    }
                }
            }
        }
        let bases: Vec<String> = entries
            .keys()
            .map(|(server, tool)| base_name(server, tool))
            .collect();
        let mut base_count: HashMap<&str, usize> = HashMap::new();
        for base in &bases {
            *base_count.entry(base).or_default() += 1;
        }
        let mut names: Vec<String> = entries
            .keys()
            .zip(&bases)
            .map(|((server, tool), base)| {
                if base.len() <= MAX_TOOL_NAME_LEN && base_count[base.as_str()] == 1 {
                    base.clone()
                } else {
                    hashed_name(base, server, tool, HASH_LEN)
                }
            })
            .collect();
        // A hashed name may, in theory, equal another final name: lengthen the hash of
        // every hashed name involved.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for name in &names {
            *seen.entry(name).or_default() += 1;
        }
        let clashing: HashSet<String> = seen
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .map(|(name, _)| name.to_owned())
            .collect();
        for (((server, tool), base), name) in entries.keys().zip(&bases).zip(names.iter_mut()) {
            if clashing.contains(name.as_str()) && *name != *base {
                *name = hashed_name(base, server, tool, HASH_LEN * 2);
            }
        }

        let mut tools: Vec<QualifiedTool> = entries
            .into_iter()
            .zip(names)
            .map(|(((server, _), tool), qualified_name)| QualifiedTool {
                qualified_name,
                server: server.to_owned(),
                tool: tool.clone(),
            })
            .collect();
        tools.sort_by(|a, b| a.qualified_name.cmp(&b.qualified_name));
        let mut by_name = HashMap::with_capacity(tools.len());
        tools.retain(|tool| {
            let index = by_name.len();
            let fresh = !by_name.contains_key(&tool.qualified_name);
            if fresh {
                by_name.insert(tool.qualified_name.clone(), index);
            } else {
                tracing::warn!(name = %tool.qualified_name, "two tools still share a qualified name; keeping one");
            }
            fresh
        });
        Self { tools, by_name }
    }

    /// Every tool, in qualified-name order.
    pub fn tools(&self) -> &[QualifiedTool] {
        &self.tools
    }

    /// The tool with this qualified name.
    pub fn resolve(&self, qualified_name: &str) -> Option<&QualifiedTool> {
        self.by_name
            .get(qualified_name)
            .map(|&index| &self.tools[index])
    }
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn base_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{}{SEPARATOR}{}", sanitize(server), sanitize(tool))
}

/// `base` cut to fit, then `_` and `hash_len` hex digits of a hash of the raw names.
fn hashed_name(base: &str, server: &str, tool: &str, hash_len: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    // `base` is ASCII (sanitized), so any byte index is a character boundary.
    let keep = base.len().min(MAX_TOOL_NAME_LEN - 1 - hash_len);
    format!("{}_{}", &base[..keep], &hex[..hash_len])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool(name: &str) -> Tool {
        Tool::new(name.to_owned(), "", Arc::new(Default::default()))
    }

    fn names(catalog: &Catalog) -> Vec<&str> {
        catalog
            .tools()
            .iter()
            .map(|tool| tool.qualified_name.as_str())
            .collect()
    }

    #[test]
    fn plain_names_are_qualified_and_sanitized() {
        let tools = [tool("read_file"), tool("list.dir"), tool("grüße")];
        let catalog = Catalog::build([("files", &tools[..])]);
        assert_eq!(
            names(&catalog),
            [
                "mcp__files__gr__e",
                "mcp__files__list_dir",
                "mcp__files__read_file"
            ]
        );
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let long = "a".repeat(80);
        let tools = [tool(&long)];
        let catalog = Catalog::build([("server", &tools[..])]);
        let name = &catalog.tools()[0].qualified_name;
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert!(name.starts_with("mcp__server__aaaa"), "{name}");
        let suffix = &name[name.len() - HASH_LEN..];
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
        assert_eq!(name.as_bytes()[name.len() - HASH_LEN - 1], b'_');
    }

    #[test]
    fn colliding_names_all_get_distinct_hashes() {
        // `a.b` and `a_b` sanitize to the same name; so do server `x` with tool `y__z`
        // and server `x__y` with tool `z`.
        let first = [tool("a.b"), tool("a_b"), tool("y__z")];
        let second = [tool("z")];
        let catalog = Catalog::build([("x", &first[..]), ("x__y", &second[..])]);
        let names = names(&catalog);
        assert_eq!(names.len(), 4);
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), 4, "{names:?}");
        assert!(
            names.iter().all(|name| name.len() <= MAX_TOOL_NAME_LEN),
            "{names:?}"
        );
        for qualified in &catalog.tools {
            assert_ne!(
                qualified.qualified_name,
                base_name(&qualified.server, &qualified.tool.name),
                "every member of a collision is hashed"
            );
        }
    }

    #[test]
    fn names_do_not_depend_on_listing_order() {
        let a = [tool("a.b"), tool("a_b"), tool("c")];
        let a_reversed = [tool("c"), tool("a_b"), tool("a.b")];
        let b = [tool(&"long".repeat(30))];
        let one = Catalog::build([("s1", &a[..]), ("s2", &b[..])]);
        let two = Catalog::build([("s2", &b[..]), ("s1", &a_reversed[..])]);
        assert_eq!(names(&one), names(&two));
    }

    #[test]
    fn hashed_names_are_the_same_in_every_run() {
        // Pinned: a change to the hash input would rename tools for every user.
        let first = [tool("a.b"), tool("a_b")];
        let long = [tool(&"long".repeat(30))];
        let catalog = Catalog::build([("s1", &first[..]), ("s2", &long[..])]);
        assert_eq!(
            names(&catalog),
            [
                "mcp__s1__a_b_66632619",
                "mcp__s1__a_b_c66b3f62",
                "mcp__s2__longlonglonglonglonglonglonglonglonglonglonglo_3f5a72c6",
            ]
        );
    }

    #[test]
    fn every_qualified_name_routes_back_to_its_server_and_raw_tool() {
        let first = [
            tool("a.b"),
            tool("a_b"),
            tool(&"x".repeat(70)),
            tool("plain"),
        ];
        let second = [tool("plain")];
        let catalog = Catalog::build([("one", &first[..]), ("two", &second[..])]);
        let mut routed: Vec<(String, String)> = catalog
            .tools()
            .iter()
            .map(|qualified| {
                let found = catalog.resolve(&qualified.qualified_name).unwrap();
                (found.server.clone(), found.tool.name.to_string())
            })
            .collect();
        routed.sort();
        let mut expected: Vec<(String, String)> = first
            .iter()
            .map(|t| ("one".to_owned(), t.name.to_string()))
            .chain([("two".to_owned(), "plain".to_owned())])
            .collect();
        expected.sort();
        assert_eq!(routed, expected);
        assert!(catalog.resolve("mcp__one__missing").is_none());
    }

    #[test]
    fn a_tool_listed_twice_appears_once_as_first_listed() {
        let mut first = tool("same");
        first.description = Some("first".into());
        let mut second = tool("same");
        second.description = Some("second".into());
        let tools = [first.clone(), second];
        let catalog = Catalog::build([("s", &tools[..])]);
        assert_eq!(names(&catalog), ["mcp__s__same"]);
        assert_eq!(catalog.tools()[0].tool, first);
    }

    mod properties {
        use std::collections::BTreeSet;

        use proptest::prelude::*;

        use super::*;

        /// Names that collide once sanitized (`a.b`, `a_b`, `a-b`, `é` and `_` …),
        /// long names, and arbitrary characters.
        fn any_name() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => proptest::string::string_regex("[a._é-]{1,5}").expect("a valid pattern"),
                1 => proptest::string::string_regex("[a-z._]{50,70}").expect("a valid pattern"),
                1 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
            ]
        }

        /// Up to 12 servers, each listing up to 12 tools (names may repeat).
        fn any_servers() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
            prop::collection::btree_map(any_name(), prop::collection::vec(any_name(), 0..12), 1..12)
                .prop_map(|servers| servers.into_iter().collect())
        }

        fn build(servers: &[(String, Vec<Tool>)]) -> Catalog {
            Catalog::build(
                servers
                    .iter()
                    .map(|(server, tools)| (server.as_str(), tools.as_slice())),
            )
        }

        fn routes(catalog: &Catalog) -> Vec<(String, String, String)> {
            catalog
                .tools()
                .iter()
                .map(|q| {
                    (
                        q.qualified_name.clone(),
                        q.server.clone(),
                        q.tool.name.to_string(),
                    )
                })
                .collect()
        }

        proptest! {
            // XorShift: ChaCha, the default, takes most of the time of an unoptimized test.
            #![proptest_config(ProptestConfig {
                cases: 512,
                rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
                ..ProptestConfig::default()
            })]

            #[test]
            fn every_tool_of_every_server_routes_back_under_a_unique_short_name(
                servers in any_servers()
            ) {
                let servers: Vec<(String, Vec<Tool>)> = servers
                    .into_iter()
                    .map(|(server, names)| (server, names.iter().map(|n| tool(n)).collect()))
                    .collect();
                let catalog = build(&servers);
                let expected: BTreeSet<(String, String)> = servers
                    .iter()
                    .flat_map(|(server, tools)| {
                        tools.iter().map(move |t| (server.clone(), t.name.to_string()))
                    })
                    .collect();
                let mut routed = BTreeSet::new();
                let mut names = HashSet::new();
                for qualified in catalog.tools() {
                    let name = &qualified.qualified_name;
                    prop_assert!(names.insert(name.clone()), "`{}` twice", name);
                    prop_assert!(name.len() <= MAX_TOOL_NAME_LEN, "`{}` too long", name);
                    prop_assert!(name.starts_with(PREFIX), "`{}`", name);
                    prop_assert_eq!(sanitize(name), name.clone());
                    let found = catalog.resolve(name).expect("every listed name resolves");
                    prop_assert_eq!(found, qualified);
                    routed.insert((found.server.clone(), found.tool.name.to_string()));
                }
                prop_assert_eq!(catalog.tools().len(), expected.len(), "one entry per tool");
                prop_assert_eq!(routed, expected);

                // Neither the order of servers nor that of their tools changes a name.
                let reversed: Vec<(String, Vec<Tool>)> = servers
                    .iter()
                    .rev()
                    .map(|(server, tools)| {
                        let mut tools = tools.clone();
                        tools.reverse();
                        (server.clone(), tools)
                    })
                    .collect();
                prop_assert_eq!(routes(&build(&reversed)), routes(&catalog));
            }
        }
    }
}
