use super::*;

/// A server, one of its tools, and the name expected for it.
type Vector<'a> = (&'a str, &'a str, &'a str);

fn named(registry: &mut Registry, tools: &[(&str, &str)]) -> Vec<String> {
    registry
        .name(tools)
        .iter()
        .map(|name| name.to_string())
        .collect()
}

/// Golden vectors: the tools of each case named together, with nothing named before,
/// give Codex's names. The first cases are the tests of Codex's naming at the pinned
/// commit (`mcp_connection_manager_tests.rs`, `test_qualify_tools_*`), with the exact
/// names where those tests only check a property; the others cover `-`, `.`, `/`,
/// unicode, names over 64 bytes and collisions. Every expected name was also computed
/// by a separate transcription of the pinned rule.
#[test]
fn tools_named_together_get_codex_names() {
    let t56 = "t".repeat(56);
    let t57 = "t".repeat(57);
    let a80 = "a".repeat(80);
    let cases: &[(&str, &[Vector])] = &[
        (
            "codex: short names",
            &[
                ("server1", "tool1", "mcp__server1__tool1"),
                ("server1", "tool2", "mcp__server1__tool2"),
            ],
        ),
        (
            "codex: long names of one server are cut to 64 with their hash",
            &[
                (
                    "my_server",
                    "extremely_lengthy_function_name_that_absolutely_surpasses_all_reasonable_limits",
                    "mcp__my_server__extremely_lengthy_function_name_tha_de03a8de696f",
                ),
                (
                    "my_server",
                    "yet_another_extremely_lengthy_function_name_that_absolutely_surpasses_all_reasonable_limits",
                    "mcp__my_server__yet_another_extremely_lengthy_funct_2e3097d5545d",
                ),
            ],
        ),
        (
            "codex: invalid characters",
            &[(
                "server.one",
                "tool.two-three",
                "mcp__server_one__tool_two_three",
            )],
        ),
        (
            "codex: hyphenated names",
            &[(
                "music-studio",
                "get-strudel-guide",
                "mcp__music_studio__get_strudel_guide",
            )],
        ),
        (
            "codex: servers that sanitize alike both get a hashed namespace",
            &[
                (
                    "basic-server",
                    "lookup",
                    "mcp__basic_server_c83615c428ad__lookup",
                ),
                (
                    "basic_server",
                    "query",
                    "mcp__basic_server_234b1425bdea__query",
                ),
            ],
        ),
        (
            "codex: tools that sanitize alike both get a hash",
            &[
                ("server", "tool-name", "mcp__server__tool_name_847507274fec"),
                ("server", "tool_name", "mcp__server__tool_name_599563b6e10c"),
            ],
        ),
        (
            "hyphens",
            &[("my-server", "get-item", "mcp__my_server__get_item")],
        ),
        (
            "dots and slashes",
            &[
                ("files", "list.dir", "mcp__files__list_dir"),
                ("files", "files/read", "mcp__files__files_read"),
            ],
        ),
        (
            "unicode: one `_` per character",
            &[
                ("files", "grüße", "mcp__files__gr__e"),
                ("files", "🚀launch", "mcp__files___launch"),
                ("wörter", "é", "mcp__w_rter___"),
            ],
        ),
        ("an empty name", &[("s", "", "mcp__s___")]),
        (
            "over 64: the tool part is cut",
            &[(
                "s",
                &a80,
                "mcp__s__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_dc67e722cd1b",
            )],
        ),
        (
            "64 exactly is kept, 65 is cut",
            &[
                (
                    "s",
                    &t56,
                    "mcp__s__tttttttttttttttttttttttttttttttttttttttttttttttttttttttt",
                ),
                (
                    "s",
                    &t57,
                    "mcp__s__ttttttttttttttttttttttttttttttttttttttttttt_27ee89616169",
                ),
            ],
        ),
        (
            "over 64 with no room for the tool: the namespace is cut",
            &[(
                "a-server-with-a-name-much-too-long-for-any-namespace-at-all",
                "t",
                "mcp__a_server_with_a_name_much_too_long_for_any_nam_d95542f1ba77",
            )],
        ),
        (
            "three tools alike",
            &[
                ("a", "b.c", "mcp__a__b_c_cbc9f73cd8ef"),
                ("a", "b-c", "mcp__a__b_c_68bdc9b9fbe9"),
                ("a", "b_c", "mcp__a__b_c_a473818453e6"),
            ],
        ),
        (
            "the same name across the `__` boundary: the later identity takes the hash",
            &[
                ("x", "y__z", "mcp__x__y__z"),
                ("x__y", "z", "mcp__x__y__z_d68844efc53b"),
            ],
        ),
        (
            "a taken hashed name: the counter finds another",
            &[
                ("x", "y__z", "mcp__x__y__z"),
                ("x", "y__z_d68844efc53b", "mcp__x__y__z_d68844efc53b"),
                ("x__y", "z", "mcp__x__y__z_e9749f4a8d7b"),
            ],
        ),
    ];
    for (case, vectors) in cases {
        let tools: Vec<(&str, &str)> = vectors.iter().map(|(s, t, _)| (*s, *t)).collect();
        let expected: Vec<&str> = vectors.iter().map(|(_, _, name)| *name).collect();
        assert_eq!(named(&mut Registry::default(), &tools), expected, "{case}");
        let mut reversed = tools.clone();
        reversed.reverse();
        let mut names = named(&mut Registry::default(), &reversed);
        names.reverse();
        assert_eq!(names, expected, "{case}, named in the other order");
    }
}

#[test]
fn sanitize_maps_each_character_outside_the_set_to_one_underscore() {
    assert_eq!(sanitize("a-b.c/d é🚀"), "a_b_c_d___");
    assert_eq!(sanitize("Keep_This_09"), "Keep_This_09");
    assert_eq!(sanitize(""), "_");
}

#[test]
fn a_server_joining_later_takes_the_suffix_and_leaves_the_old_names() {
    let mut registry = Registry::default();
    assert_eq!(
        named(&mut registry, &[("basic_server", "query")]),
        ["mcp__basic_server__query"]
    );
    // Named together, Codex would hash both namespaces; the name already given stays.
    assert_eq!(
        named(
            &mut registry,
            &[("basic-server", "lookup"), ("basic_server", "query")]
        ),
        [
            "mcp__basic_server_c83615c428ad__lookup",
            "mcp__basic_server__query"
        ]
    );
}

#[test]
fn a_refresh_keeps_every_name_and_a_new_tool_takes_the_suffix() {
    let mut registry = Registry::default();
    let first = named(
        &mut registry,
        &[("server", "tool_name"), ("server", &"x".repeat(70))],
    );
    assert_eq!(first[0], "mcp__server__tool_name");
    let again = named(
        &mut registry,
        &[("server", "tool_name"), ("server", &"x".repeat(70))],
    );
    assert_eq!(again, first, "the same tools listed again keep their names");
    let refreshed = named(
        &mut registry,
        &[("server", "tool-name"), ("server", "tool_name")],
    );
    assert_eq!(
        refreshed,
        [
            "mcp__server__tool_name_847507274fec",
            "mcp__server__tool_name"
        ]
    );
}

#[test]
fn a_name_is_never_given_to_another_tool_and_comes_back_with_its_own() {
    let mut registry = Registry::default();
    assert_eq!(named(&mut registry, &[("x", "y__z")]), ["mcp__x__y__z"]);
    // `x` is gone: the plain name is free in this set, but it was `x`'s.
    let later = named(&mut registry, &[("x__y", "z")]);
    assert_ne!(later[0], "mcp__x__y__z");
    assert_eq!(later, ["mcp__x__y__z_d68844efc53b"]);
    assert_eq!(
        named(&mut registry, &[("x", "y__z"), ("x__y", "z")]),
        ["mcp__x__y__z", "mcp__x__y__z_d68844efc53b"]
    );
}

#[test]
fn a_server_keeps_its_namespace_and_a_namespace_is_not_given_twice() {
    let mut registry = Registry::default();
    named(
        &mut registry,
        &[("basic-server", "lookup"), ("basic_server", "query")],
    );
    // Its peer gone, `basic-server` still names new tools in its hashed namespace.
    assert_eq!(
        named(
            &mut registry,
            &[("basic-server", "lookup"), ("basic-server", "new")]
        ),
        [
            "mcp__basic_server_c83615c428ad__lookup",
            "mcp__basic_server_c83615c428ad__new"
        ]
    );

    let mut registry = Registry::default();
    named(&mut registry, &[("basic_server", "query")]);
    // Alone in this set, `basic-server` still may not have `basic_server`'s namespace.
    assert_eq!(
        named(&mut registry, &[("basic-server", "lookup")]),
        ["mcp__basic_server_c83615c428ad__lookup"]
    );
}

#[test]
fn declared_servers_get_codex_namespaces_whichever_is_named_first() {
    let codex = [
        "mcp__basic_server_c83615c428ad__lookup",
        "mcp__basic_server_234b1425bdea__query",
    ];
    let declared =
        || Registry::default().declaring(["basic-server".to_owned(), "basic_server".to_owned()]);
    // One order of readiness, then the other: each server named alone, as it joins.
    let mut registry = declared();
    let first = named(&mut registry, &[("basic-server", "lookup")]);
    let second = named(
        &mut registry,
        &[("basic-server", "lookup"), ("basic_server", "query")],
    );
    assert_eq!(first, [codex[0]]);
    assert_eq!(second, codex);

    let mut registry = declared();
    let first = named(&mut registry, &[("basic_server", "query")]);
    let second = named(
        &mut registry,
        &[("basic-server", "lookup"), ("basic_server", "query")],
    );
    assert_eq!(first, [codex[1]]);
    assert_eq!(second, codex);

    // A declared server that no other sanitizes like keeps the plain namespace.
    let mut registry = Registry::default().declaring(["my-server".to_owned(), "x".to_owned()]);
    assert_eq!(
        named(&mut registry, &[("my-server", "get-item")]),
        ["mcp__my_server__get_item"]
    );
}

#[test]
fn a_server_not_declared_is_a_newcomer_beside_the_declared_ones() {
    let mut registry = Registry::default().declaring(["basic_server".to_owned()]);
    // Named first, it still may not take the declared server's namespace.
    assert_eq!(
        named(&mut registry, &[("basic-server", "lookup")]),
        ["mcp__basic_server_c83615c428ad__lookup"]
    );
    assert_eq!(
        named(
            &mut registry,
            &[("basic-server", "lookup"), ("basic_server", "query")]
        ),
        [
            "mcp__basic_server_c83615c428ad__lookup",
            "mcp__basic_server_234b1425bdea__query"
        ],
        "named with a server that sanitizes alike, as in Codex"
    );
}

#[test]
fn the_server_of_a_qualified_name_is_found_from_the_name_alone() {
    let long = "a-server-with-a-name-much-too-long-for-any-namespace-at-all";
    let longer = "a-server-with-a-name-much-too-long-for-any-namespace-and-more";
    let servers = [
        "my-server",
        "math",
        "a",
        "a__b",
        "basic-server",
        "basic_server",
        long,
        longer,
    ];
    let cases: &[(&str, &[&str])] = &[
        ("mcp__my_server__get_item", &["my-server"]),
        ("mcp__math__add", &["math"]),
        ("mcp__math__", &[]),
        ("mcp__a__x", &["a"]),
        // Either `a`'s tool `b__c` or `a__b`'s tool `c`: both, so the caller starts all.
        ("mcp__a__b__c", &["a", "a__b"]),
        // Sanitized alike: the plain namespace may be either's; a hashed one is one's.
        (
            "mcp__basic_server__query",
            &["basic-server", "basic_server"],
        ),
        ("mcp__basic_server_c83615c428ad__lookup", &["basic-server"]),
        ("mcp__basic_server_234b1425bdea__query", &["basic_server"]),
        // Cut namespaces: the 51 first characters are shared.
        (
            "mcp__a_server_with_a_name_much_too_long_for_any_nam_d95542f1ba77",
            &[long, longer],
        ),
        (
            "mcp__a_server_with_a_name_much_too_long_for_any_nam_nothex00000",
            &[],
        ),
        ("get_item", &[]),
        ("mcp__unknown__tool", &[]),
    ];
    for (qualified, expected) in cases {
        assert_eq!(
            servers_for_qualified_name(qualified, servers),
            *expected,
            "{qualified}"
        );
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Names that sanitize alike, cross the `__` boundary, or are long or unicode.
    fn any_name() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::string::string_regex("[ab._é-]{1,5}").expect("a valid pattern"),
            1 => proptest::string::string_regex("[a-z_.]{45,70}").expect("a valid pattern"),
            1 => prop::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter),
        ]
    }

    /// (server, tool) pairs, each once, in two batches: the second joins later.
    type Pairs = Vec<(String, String)>;

    fn any_batches() -> impl Strategy<Value = (Pairs, Pairs)> {
        let pairs = || prop::collection::btree_set((any_name(), any_name()), 0..24);
        (pairs(), pairs()).prop_map(|(first, second)| {
            let second = second.difference(&first).cloned().collect();
            (first.into_iter().collect(), second)
        })
    }

    fn refs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
        pairs
            .iter()
            .map(|(s, t)| (s.as_str(), t.as_str()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::default()
        })]

        #[test]
        fn names_stay_unique_short_stable_and_attributable((first, second) in any_batches()) {
            let mut registry = Registry::default();
            let first_names = registry.name(&refs(&first));
            let all: Vec<(String, String)> = first.iter().chain(&second).cloned().collect();
            let all_names = registry.name(&refs(&all));

            prop_assert_eq!(&all_names[..first.len()], &first_names[..], "invariant 1");
            let mut seen = HashSet::new();
            let servers: BTreeSet<&str> = all.iter().map(|(s, _)| s.as_str()).collect();
            for ((server, _), name) in all.iter().zip(&all_names) {
                prop_assert!(seen.insert(name.clone()), "invariant 2: `{}` twice", name);
                prop_assert!(name.len() <= MAX_TOOL_NAME_LEN, "`{}` too long", name);
                prop_assert_eq!(&*sanitize(name), &**name);
                prop_assert!(
                    servers_for_qualified_name(name, servers.iter().copied())
                        .contains(&server.as_str()),
                    "`{}` is not attributed to `{}`", name, server
                );
            }
        }
    }
}

#[test]
fn departed_names_stay_reserved_up_to_a_bound() {
    let mut registry = Registry::remembering(2);
    named(&mut registry, &[("x", "y__z")]);
    // `x`'s tool departed and is remembered: a newcomer cannot have its name.
    assert_eq!(
        named(&mut registry, &[("x__y", "z")]),
        ["mcp__x__y__z_d68844efc53b"]
    );
    // Churn: every naming lists new tools only; two departures are remembered.
    for round in 0..10 {
        let tool = format!("t{round}");
        named(&mut registry, &[("churn", &tool), ("x__y", "z")]);
        assert!(registry.len() <= 2 + 2, "{} names kept", registry.len());
    }
    // `x`'s departure is forgotten: its old name is free again.
    assert_eq!(
        named(&mut registry, &[("x__y", "z"), ("x", "y__z")]),
        ["mcp__x__y__z_d68844efc53b", "mcp__x__y__z"]
    );
    // A tool that comes back before it is forgotten keeps its name.
    let mut registry = Registry::remembering(2);
    let first = named(&mut registry, &[("s", "a"), ("s", "b")]);
    named(&mut registry, &[("s", "b")]);
    named(&mut registry, &[("s", "b"), ("t", "c")]);
    assert_eq!(named(&mut registry, &[("s", "a"), ("s", "b")]), first);
    // A tool that comes and goes does not grow the queue of departures.
    for _ in 0..100 {
        named(&mut registry, &[("s", "a")]);
        named(&mut registry, &[("s", "a"), ("s", "b")]);
    }
    assert!(
        registry.departures.len() <= 2 * 2 + 16,
        "{} departures queued",
        registry.departures.len()
    );
}

#[test]
fn qualify_gives_the_names_tools_named_together_get() {
    let items = [
        ("my-server", "get-item"),
        ("basic-server", "a"),
        ("basic_server", "a"),
    ];
    let names = qualify(&items);
    assert_eq!(names[0], "mcp__my_server__get_item");
    assert_eq!(
        names,
        named(&mut Registry::default(), &items),
        "the rules of tools named together"
    );
    let mut reversed = items;
    reversed.reverse();
    let mut again = qualify(&reversed);
    again.reverse();
    assert_eq!(again, names, "whatever the order");
}
