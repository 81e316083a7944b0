use super::*;

fn tool(name: &str) -> Tool {
    Tool::new(name.to_owned(), "", Arc::new(Default::default()))
}

/// A runtime's shared state for servers `names`, each started with one tool
/// `old`, without connections.
fn shared(names: &[&str]) -> Shared {
    let servers = names
        .iter()
        .map(|name| {
            let server = Server::new(ServerConfig::stdio(*name, "unused", Vec::new()));
            server.settled.send_replace(Some(Arc::new(joining::Settled {
                startup_time: Duration::ZERO,
                error: None,
                tools_list_requests: 1,
                binding: None,
            })));
            (name.to_string(), server)
        })
        .collect();
    let listings = names
        .iter()
        .map(|name| {
            let listing = Listing {
                stored: 0,
                next: 1,
                tools: Arc::new(vec![tool("old")]),
            };
            (name.to_string(), listing)
        })
        .collect();
    Shared::new(servers, listings)
}

fn published(shared: &Shared) -> Vec<String> {
    shared
        .catalog
        .borrow()
        .tools()
        .iter()
        .map(|tool| tool.qualified_name.clone())
        .collect()
}

#[test]
fn a_catalog_built_before_a_newer_listing_is_stored_is_never_published_after_it() {
    let shared = shared(&["a", "b"]);
    let a = shared.next_generation("a");
    let b = shared.next_generation("b");
    // The refresh of `a` stores its answer and builds a catalog from it...
    assert_eq!(shared.store("a", a, vec![tool("new")]), Some(1));
    let built_by_a = shared.build_catalog();
    // ...but before it publishes, the refresh of `b` stores, builds and publishes.
    assert_eq!(shared.store("b", b, vec![tool("new")]), Some(2));
    assert!(shared.publish(shared.build_catalog()));
    assert!(!shared.publish(built_by_a), "the stale build is refused");
    assert_eq!(published(&shared), ["mcp__a__new", "mcp__b__new"]);
}

#[test]
fn an_older_answer_never_replaces_a_newer_listing() {
    let shared = shared(&["a"]);
    let older = shared.next_generation("a");
    let newer = shared.next_generation("a");
    assert_eq!(shared.store("a", newer, vec![tool("newer")]), Some(1));
    assert_eq!(shared.store("a", older, vec![tool("older")]), None);
    assert!(shared.publish(shared.build_catalog()));
    assert_eq!(published(&shared), ["mcp__a__newer"]);
}
