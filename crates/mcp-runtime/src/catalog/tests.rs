use std::collections::HashSet;

use super::*;
use crate::config::ToolConfig;

fn tool(name: &str) -> ListedTool {
    Tool::new(name.to_owned(), "", Arc::new(Default::default())).into()
}

fn server(name: &str) -> ServerConfig {
    ServerConfig::stdio(name, "unused", vec![])
}

/// A first catalog of `servers`.
fn build<'a>(servers: impl IntoIterator<Item = (&'a ServerConfig, &'a [ListedTool])>) -> Catalog {
    Catalog::build(&Catalog::default(), servers)
}

fn names(catalog: &Catalog) -> Vec<&str> {
    catalog.tools().map(|tool| &*tool.qualified_name).collect()
}

#[test]
fn names_are_codex_names_in_qualified_name_order() {
    let files = server("my-files");
    let tools = [
        tool("read_file"),
        tool("list.dir"),
        tool("grüße"),
        tool("get-item"),
    ];
    let catalog = build([(&files, &tools[..])]);
    assert_eq!(
        names(&catalog),
        [
            "mcp__my_files__get_item",
            "mcp__my_files__gr__e",
            "mcp__my_files__list_dir",
            "mcp__my_files__read_file",
        ]
    );
}

#[test]
fn names_do_not_depend_on_listing_order() {
    let (s1, s2) = (server("s1"), server("s-1"));
    let a = [tool("a.b"), tool("a_b"), tool("c")];
    let a_reversed = [tool("c"), tool("a_b"), tool("a.b")];
    let b = [tool(&"long".repeat(30)), tool("c")];
    let one = build([(&s1, &a[..]), (&s2, &b[..])]);
    let two = build([(&s2, &b[..]), (&s1, &a_reversed[..])]);
    assert_eq!(names(&one), names(&two));
    assert_eq!(names(&one).len(), 5);
}

#[test]
fn every_qualified_name_routes_back_to_its_server_and_raw_tool() {
    let (one, two) = (server("one"), server("two"));
    let first = [
        tool("a.b"),
        tool("a_b"),
        tool(&"x".repeat(70)),
        tool("plain"),
    ];
    let second = [tool("plain")];
    let catalog = build([(&one, &first[..]), (&two, &second[..])]);
    let mut routed: Vec<(String, String)> = catalog
        .tools()
        .map(|qualified| {
            let found = catalog.resolve(&qualified.qualified_name).unwrap();
            (found.server.to_string(), found.tool.name.to_string())
        })
        .collect();
    routed.sort();
    let mut expected: Vec<(String, String)> = first
        .iter()
        .map(|t| ("one".to_owned(), t.tool.name.to_string()))
        .chain([("two".to_owned(), "plain".to_owned())])
        .collect();
    expected.sort();
    assert_eq!(routed, expected);
    assert!(catalog.resolve("mcp__one__missing").is_none());
}

#[test]
fn a_tool_listed_twice_appears_once_as_first_listed() {
    let s = server("s");
    let mut first = tool("same");
    Arc::make_mut(&mut first.tool).description = Some("first".into());
    let mut second = tool("same");
    Arc::make_mut(&mut second.tool).description = Some("second".into());
    let tools = [first.clone(), second];
    let catalog = build([(&s, &tools[..])]);
    assert_eq!(names(&catalog), ["mcp__s__same"]);
    assert_eq!(catalog.tools().next().unwrap().tool, first.tool);
}

#[test]
fn only_the_tools_a_server_exposes_are_named() {
    let mut s = server("s");
    s.enabled_tools = Some(vec!["kept".into(), "disabled".into()]);
    s.disabled_tools = vec!["disabled".into()];
    let tools = [tool("kept"), tool("disabled"), tool("other")];
    let catalog = build([(&s, &tools[..])]);
    assert_eq!(names(&catalog), ["mcp__s__kept"]);
}

#[test]
fn a_server_joining_later_with_a_colliding_name_leaves_the_old_names_intact() {
    let (early, late) = (server("basic_server"), server("basic-server"));
    let early_tools = [tool("query")];
    let late_tools = [tool("lookup"), tool("query")];
    let first = build([(&early, &early_tools[..])]);
    assert_eq!(names(&first), ["mcp__basic_server__query"]);

    let second = Catalog::build(
        &first,
        [(&early, &early_tools[..]), (&late, &late_tools[..])],
    );
    let by_server = |catalog: &Catalog, name: &str| {
        let tool = catalog.resolve(name).expect("named");
        (tool.server.to_string(), tool.tool.name.to_string())
    };
    assert_eq!(
        by_server(&second, "mcp__basic_server__query"),
        ("basic_server".to_owned(), "query".to_owned()),
        "the name given first still routes to the same tool"
    );
    assert_eq!(
        names(&second),
        [
            "mcp__basic_server__query",
            "mcp__basic_server_c83615c428ad__lookup",
            "mcp__basic_server_c83615c428ad__query",
        ]
    );
    // Built at once, both would have been hashed (Codex's names).
    let at_once = build([(&early, &early_tools[..]), (&late, &late_tools[..])]);
    assert_eq!(
        names(&at_once),
        [
            "mcp__basic_server_234b1425bdea__query",
            "mcp__basic_server_c83615c428ad__lookup",
            "mcp__basic_server_c83615c428ad__query",
        ]
    );
}

#[test]
fn servers_known_in_advance_get_codex_names_whichever_joins_first() {
    let (dash, under) = (server("basic-server"), server("basic_server"));
    let dash_tools = [tool("lookup")];
    let under_tools = [tool("query")];
    let codex = [
        "mcp__basic_server_234b1425bdea__query",
        "mcp__basic_server_c83615c428ad__lookup",
    ];
    for (first, first_tools) in [(&dash, &dash_tools[..]), (&under, &under_tools[..])] {
        let lineage = Catalog::for_servers(["basic-server", "basic_server"]);
        let alone = Catalog::build(&lineage, [(first, first_tools)]);
        let both = Catalog::build(
            &alone,
            [(&dash, &dash_tools[..]), (&under, &under_tools[..])],
        );
        assert_eq!(names(&both), codex, "`{}` joined first", first.name);
        assert!(
            names(&alone).iter().all(|name| codex.contains(name)),
            "`{}` alone already has its final name",
            first.name
        );
    }
}

#[test]
fn two_lineages_that_know_each_others_servers_join_into_the_names_of_one() {
    let (dash, under, other) = (server("basic-server"), server("basic_server"), server("o"));
    let dash_tools = [tool("lookup")];
    let under_tools = [tool("query"), tool("lookup")];
    let other_tools = [tool("lookup")];
    let all = [
        (&dash, &dash_tools[..]),
        (&under, &under_tools[..]),
        (&other, &other_tools[..]),
    ];
    let one = Catalog::build(
        &Catalog::for_servers(["basic-server", "basic_server", "o"]),
        all,
    );
    // Each runtime of a part declares the other part's servers.
    let own = Catalog::build(
        &Catalog::for_servers(["basic-server", "o", "basic_server"]),
        [all[0], all[2]],
    );
    let shared = Catalog::build(
        &Catalog::for_servers(["basic_server", "basic-server", "o"]),
        [all[1]],
    );
    let joined = own.joined(&shared);
    assert_eq!(names(&joined), names(&one));
    assert_eq!(names(&shared.joined(&own)), names(&one));
    assert_eq!(
        joined
            .server_tools("basic_server")
            .map(|tool| &*tool.qualified_name)
            .collect::<Vec<_>>(),
        names(&shared)
    );
    // A server both hold keeps the first's tools.
    let again = joined.joined(&Catalog::build(&Catalog::default(), [all[2]]));
    assert_eq!(names(&again), names(&one));
}

#[test]
fn a_refresh_keeps_every_name_and_shares_unchanged_tools() {
    let (s, t) = (server("s"), server("t"));
    let s_tools = [tool("a.b"), tool("long".repeat(20).as_str())];
    let t_tools = [tool("x")];
    let first = build([(&s, &s_tools[..]), (&t, &t_tools[..])]);

    let mut changed = tool("x");
    Arc::make_mut(&mut changed.tool).description = Some("new".into());
    let refreshed_t = [changed, tool("a.b")];
    let second = Catalog::build(&first, [(&s, &s_tools[..]), (&t, &refreshed_t[..])]);
    for old in first.tools() {
        let new = second.resolve(&old.qualified_name).expect("a name is kept");
        assert_eq!((&new.server, &new.tool.name), (&old.server, &old.tool.name));
        assert_eq!(
            Arc::ptr_eq(&new.tool, &old.tool),
            &*old.server == "s",
            "`{}`: an unchanged tool is shared, a changed one replaced",
            old.qualified_name
        );
    }
    assert_eq!(second.tools().len(), 4);
    assert_eq!(
        second
            .resolve("mcp__t__x")
            .unwrap()
            .tool
            .description
            .as_deref(),
        Some("new")
    );
}

#[test]
fn replacing_a_server_keeps_the_names_of_tools_that_left() {
    let (s, t) = (server("s"), server("t"));
    let (dotted, t_tools) = ([tool("a.b")], [tool("x")]);
    let first = Catalog::for_servers(["s", "t"])
        .with_server(&s, &dotted)
        .with_server(&t, &t_tools);
    assert_eq!(names(&first), ["mcp__s__a_b", "mcp__t__x"]);

    let emptied = first.with_server(&s, &[]);
    assert_eq!(names(&emptied), ["mcp__t__x"]);
    assert!(emptied.server_tools("s").next().is_none());
    let underscored = emptied.with_server(&s, &[tool("a_b")]);
    let taken = underscored.server_tools("s").next().unwrap();
    assert_ne!(
        &*taken.qualified_name, "mcp__s__a_b",
        "a departed tool's name stays reserved"
    );
    let back = underscored.with_server(&s, &dotted);
    assert_eq!(
        names(&back),
        ["mcp__s__a_b", "mcp__t__x"],
        "the tool gets its name back"
    );
    assert!(
        std::ptr::eq(
            back.resolve("mcp__t__x").unwrap(),
            first.resolve("mcp__t__x").unwrap()
        ),
        "the other server's entry is shared, not rebuilt"
    );
}

#[test]
fn each_tool_carries_its_host_settings() {
    let mut s = server("s");
    s.default_tools_approval_mode = Some(ApprovalMode::Prompt);
    s.supports_parallel_tool_calls = true;
    let own = ToolConfig {
        approval_mode: Some(ApprovalMode::Approve),
        output_token_limit: Some(2000),
    };
    s.tools.insert("own".into(), own);
    let plain = server("plain");
    let s_tools = [tool("own"), tool("default")];
    let plain_tools = [tool("tool")];
    let catalog = build([(&s, &s_tools[..]), (&plain, &plain_tools[..])]);
    let settings = |name: &str| {
        let tool = catalog.resolve(name).expect("named");
        (
            tool.approval_mode,
            tool.output_token_limit,
            tool.supports_parallel_tool_calls,
        )
    };
    assert_eq!(
        settings("mcp__s__own"),
        (Some(ApprovalMode::Approve), Some(2000), true)
    );
    assert_eq!(
        settings("mcp__s__default"),
        (Some(ApprovalMode::Prompt), None, true)
    );
    assert_eq!(settings("mcp__plain__tool"), (None, None, false));
}

mod properties {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::naming::{MAX_TOOL_NAME_LEN, sanitize, servers_for_qualified_name};

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

    fn build(previous: &Catalog, servers: &[(ServerConfig, Vec<ListedTool>)]) -> Catalog {
        Catalog::build(
            previous,
            servers
                .iter()
                .map(|(config, tools)| (config, tools.as_slice())),
        )
    }

    fn routes(catalog: &Catalog) -> Vec<(String, String, String)> {
        catalog
            .tools()
            .map(|q| {
                (
                    q.qualified_name.to_string(),
                    q.server.to_string(),
                    q.tool.name.to_string(),
                )
            })
            .collect()
    }

    proptest! {
        // XorShift: ChaCha, the default, takes most of the time of an unoptimized test.
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::default()
        })]

        #[test]
        fn every_tool_of_every_server_routes_back_under_a_unique_short_name(
            servers in any_servers(),
            joining_later in 0..12_usize,
        ) {
            let servers: Vec<(ServerConfig, Vec<ListedTool>)> = servers
                .into_iter()
                .map(|(name, tools)| (server(&name), tools.iter().map(|n| tool(n)).collect()))
                .collect();
            let catalog = build(&Catalog::default(), &servers);
            let expected: BTreeSet<(String, String)> = servers
                .iter()
                .flat_map(|(config, tools)| {
                    tools.iter().map(move |t| (config.name.clone(), t.tool.name.to_string()))
                })
                .collect();
            let mut routed = BTreeSet::new();
            let mut names = HashSet::new();
            for qualified in catalog.tools() {
                let name = &qualified.qualified_name;
                prop_assert!(names.insert(name.clone()), "`{}` twice", name);
                prop_assert!(name.len() <= MAX_TOOL_NAME_LEN, "`{}` too long", name);
                prop_assert!(name.starts_with("mcp__"), "`{}`", name);
                prop_assert_eq!(&*sanitize(name), &**name);
                let found = catalog.resolve(name).expect("every listed name resolves");
                prop_assert_eq!(found, qualified);
                prop_assert!(servers_for_qualified_name(
                    name,
                    servers.iter().map(|(config, _)| config.name.as_str())
                ).contains(&&*qualified.server));
                routed.insert((found.server.to_string(), found.tool.name.to_string()));
            }
            prop_assert_eq!(catalog.tools().len(), expected.len(), "one entry per tool");
            prop_assert_eq!(&routed, &expected);

            // Neither the order of servers nor that of their tools changes a name.
            let reversed: Vec<(ServerConfig, Vec<ListedTool>)> = servers
                .iter()
                .rev()
                .map(|(config, tools)| {
                    let mut tools = tools.clone();
                    tools.reverse();
                    (config.clone(), tools)
                })
                .collect();
            prop_assert_eq!(routes(&build(&Catalog::default(), &reversed)), routes(&catalog));

            // Servers joining later never rename a tool already named.
            let split = joining_later.min(servers.len());
            let early = build(&Catalog::default(), &servers[..split]);
            let all = build(&early, &servers);
            for named in early.tools() {
                let kept = all.resolve(&named.qualified_name).expect("a name is kept");
                prop_assert_eq!((&kept.server, &kept.tool.name), (&named.server, &named.tool.name));
            }
            prop_assert_eq!(all.tools().len(), expected.len(), "no tool is dropped");
        }

        #[test]
        fn servers_named_one_at_a_time_get_the_names_of_a_full_build(
            servers in any_servers(),
            replaced in 0..12_usize,
            new_tools in prop::collection::vec(any_name(), 0..12),
        ) {
            let servers: Vec<(ServerConfig, Vec<ListedTool>)> = servers
                .into_iter()
                .map(|(name, tools)| (server(&name), tools.iter().map(|n| tool(n)).collect()))
                .collect();
            let lineage = || Catalog::for_servers(servers.iter().map(|(config, _)| config.name.clone()));
            // Servers joining one by one, in the reverse order: whole builds of the
            // servers so far, and one server named at a time.
            let mut whole = lineage();
            for joined in (0..servers.len()).rev() {
                whole = build(&whole, &servers[joined..]);
            }
            let one_at_a_time = servers
                .iter()
                .rev()
                .fold(lineage(), |catalog, (config, tools)| catalog.with_server(config, tools));
            prop_assert_eq!(routes(&one_at_a_time), routes(&whole));
            for (config, tools) in &servers {
                let of_server: Vec<_> = one_at_a_time.server_tools(&config.name).collect();
                prop_assert_eq!(of_server.len(), tools.iter().map(|t| &t.tool.name).collect::<BTreeSet<_>>().len());
                prop_assert!(of_server.iter().all(|q| *q.server == *config.name));
            }

            // Replacing one server's tools: what a full build from the same catalog
            // gives, with every other server's entries shared.
            let replaced = replaced % servers.len();
            let new_tools: Vec<ListedTool> = new_tools.iter().map(|n| tool(n)).collect();
            let next = one_at_a_time.with_server(&servers[replaced].0, &new_tools);
            let mut changed = servers.clone();
            changed[replaced].1 = new_tools;
            // The same history in a lineage of its own, which `next` did not name in.
            let twin = servers
                .iter()
                .rev()
                .fold(lineage(), |catalog, (config, tools)| catalog.with_server(config, tools));
            prop_assert_eq!(routes(&next), routes(&build(&twin, &changed)));
            for kept in next.tools().filter(|q| *q.server != *servers[replaced].0.name) {
                let before = one_at_a_time.resolve(&kept.qualified_name).expect("kept");
                prop_assert!(std::ptr::eq(kept, before), "`{}` is shared", kept.qualified_name);
            }
        }
    }
}

/// A tool with a description and input properties (name, description).
fn described(name: &str, description: &str, properties: &[(&str, &str)]) -> ListedTool {
    let properties: serde_json::Map<String, serde_json::Value> = properties
        .iter()
        .map(|(name, description)| {
            (
                (*name).to_owned(),
                serde_json::json!({ "type": "string", "description": description }),
            )
        })
        .collect();
    let schema = serde_json::json!({ "type": "object", "properties": properties });
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema)).into()
}

fn found(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|hit| &*hit.tool.qualified_name).collect()
}

fn search_catalog() -> (Catalog, [ServerConfig; 2]) {
    let (files, web) = (server("files"), server("web"));
    let file_tools = [
        described(
            "read_file",
            "Read the complete contents of a file from the file system.",
            &[("path", "Path of the file to read")],
        ),
        described(
            "listDirectory",
            "List every entry of a directory, files and folders.",
            &[("path", "The directory")],
        ),
        described(
            "move",
            "Move or rename files and directories.",
            &[("source", "Where it is"), ("destination", "Where it goes")],
        ),
    ];
    let web_tools = [
        described(
            "fetch",
            "Fetch a URL from the internet and return its page as markdown; can read a file served over HTTP.",
            &[("url", "The URL to fetch")],
        ),
        described("read", "Read the web page a search found.", &[]),
    ];
    let catalog = build([(&files, &file_tools[..]), (&web, &web_tools[..])]);
    (catalog, [files, web])
}

#[test]
fn a_search_ranks_tools_by_their_names_descriptions_and_parameters() {
    let (catalog, _) = search_catalog();
    let hits = catalog.search("read a file", 10);
    assert_eq!(
        found(&hits)[0],
        "mcp__files__read_file",
        "both terms in the name and the description outrank either alone: {hits:?}"
    );
    assert!(
        found(&hits).contains(&"mcp__web__fetch"),
        "the description counts"
    );
    assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score));
    assert!(hits.iter().all(|hit| hit.score > 0.0 && !hit.exact_name));

    // camelCase is split, plurals are one term.
    assert_eq!(
        found(&catalog.search("directories list", 1)),
        ["mcp__files__listDirectory"]
    );
    // A parameter's name and description count.
    assert_eq!(
        found(&catalog.search("destination", 5)),
        ["mcp__files__move"]
    );
    // A term no tool holds finds nothing; neither does a stop word.
    assert!(catalog.search("kubernetes", 5).is_empty());
    assert!(catalog.search("the", 5).is_empty());
    assert!(catalog.search("read", 0).is_empty());
    assert!(
        catalog.search("  ", 5).is_empty(),
        "a blank query names no tool"
    );
    // A limit past the catalog's size is every match, not an allocation of its size.
    assert_eq!(catalog.search("read a file", usize::MAX).len(), hits.len());
}

#[test]
fn an_exact_name_ranks_first_whatever_the_scores() {
    let (catalog, _) = search_catalog();
    // "read" is a description word of several tools, and web's tool's whole name.
    let hits = catalog.search("read", 10);
    assert_eq!(found(&hits)[0], "mcp__web__read");
    assert!(hits[0].exact_name);
    assert!(hits[1..].iter().all(|hit| !hit.exact_name));
    // Qualified names, and original names, with case and `-` against `_` aside.
    for query in ["mcp__files__read_file", "READ-FILE", " read_file "] {
        let hits = catalog.search(query, 3);
        assert_eq!(found(&hits)[0], "mcp__files__read_file", "{query}");
        assert!(hits[0].exact_name, "{query}");
    }
}

#[test]
fn a_search_can_keep_to_one_server() {
    let (catalog, _) = search_catalog();
    let hits = catalog.search_server("web", "read a file", 10);
    assert_eq!(found(&hits), ["mcp__web__fetch", "mcp__web__read"]);
    assert!(catalog.search_server("nowhere", "read", 10).is_empty());
}

#[test]
fn a_server_whose_tools_change_is_indexed_again_and_the_others_are_not() {
    let (catalog, [files, web]) = search_catalog();
    assert!(catalog.search("kubernetes", 5).is_empty());
    let web_tools = [described(
        "deploy",
        "Deploy a manifest to a Kubernetes cluster.",
        &[],
    )];
    let changed = catalog.with_server(&web, &web_tools);
    let hits = changed.search("kubernetes", 5);
    assert_eq!(found(&hits), ["mcp__web__deploy"]);
    assert!(changed.search("fetch", 5).is_empty(), "the old tools left");

    // The unchanged server's entry, with the index the first search built, is shared.
    let (old, new) = (&catalog.servers["files"], &changed.servers["files"]);
    assert!(Arc::ptr_eq(old, new));
    assert!(new.index.get().is_some());
    assert!(changed.servers["web"].index.get().is_some());
    let _ = files;
}

#[test]
fn a_joined_catalog_shares_the_indexes_of_the_servers_it_keeps_whole() {
    let (catalog, _) = search_catalog();
    let other_server = server("other");
    let other = build([(
        &other_server,
        &[described("ping", "Check it is up.", &[])][..],
    )]);
    assert_eq!(found(&other.search("ping", 1)), ["mcp__other__ping"]);
    let joined = catalog.joined(&other);
    assert!(Arc::ptr_eq(
        &joined.servers["other"],
        &other.servers["other"]
    ));
    assert_eq!(found(&joined.search("ping", 5)), ["mcp__other__ping"]);
    assert_eq!(
        joined.search("read a file", 10).len(),
        catalog.search("read a file", 10).len()
    );
}

#[test]
fn a_servers_instructions_lead_a_search_to_its_tools_and_survive_its_changes() {
    let (catalog, [files, _]) = search_catalog();
    assert!(catalog.search("hiking trails", 5).is_empty());
    let told = catalog.with_server_instructions(
        "web",
        Some("Use these tools to look up hiking trails and their maps."),
    );
    let hits = told.search("hiking trails", 5);
    assert_eq!(found(&hits), ["mcp__web__fetch", "mcp__web__read"]);
    // Weighted below a tool's own words: the one tool whose description holds the
    // other word ranks above the server's other tool.
    let hits = told.search("maps search", 5);
    assert_eq!(found(&hits)[0], "mcp__web__read", "{hits:?}");

    // The same instructions change nothing; another server's change keeps them.
    let same = told.with_server_instructions(
        "web",
        Some("Use these tools to look up hiking trails and their maps."),
    );
    assert!(Arc::ptr_eq(&same.servers["web"], &told.servers["web"]));
    let changed = told.with_server(&files, &[described("stat", "File metadata.", &[])]);
    assert_eq!(changed.search("hiking", 5).len(), 2);
    // A server the catalog has no tool of is left out.
    assert!(
        told.with_server_instructions("nowhere", Some("x"))
            .servers
            .get("nowhere")
            .is_none()
    );
    // Its own listing changing keeps them too.
    let web = server("web");
    let relisted = told.with_server(&web, &[described("browse", "Open a page.", &[])]);
    assert_eq!(found(&relisted.search("hiking", 5)), ["mcp__web__browse"]);
    assert!(
        told.with_server_instructions("web", None)
            .search("hiking", 5)
            .is_empty()
    );
}
