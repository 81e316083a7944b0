//! Tool search over real catalogs: every tool's name finds it first, and the labelled
//! queries of `search/queries.json` find their tools, held to floors a regression of
//! the ranking would cross (`cargo bench -p mcp-runtime-fixtures --bench
//! search_quality` prints the figures).

#[path = "search_quality_harness.rs"]
mod harness;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_rank_first_and_labelled_queries_find_their_tools() {
    let dir = temp_dir();
    let fixture = std::path::Path::new(env!("CARGO_BIN_EXE_mcp-fixture"));
    let runtime = harness::real_servers(dir.path(), fixture).await;
    let real = runtime.catalog();
    assert_eq!(
        real.len(),
        43,
        "the pinned servers' tools and the fixture's"
    );
    let queries = harness::queries();
    for labelled in &queries {
        for name in &labelled.expect {
            assert!(real.resolve(name).is_some(), "{name} is a tool");
        }
    }
    let large = harness::with_synthetic(&real, 2000);
    assert_eq!(large.len(), 2043);

    for catalog in [&*real, &large] {
        let (first, total, misses) = harness::exact_names(catalog);
        assert_eq!(first, total, "every name finds its tool first: {misses:?}");
    }
    let alone = harness::measure(&real, &queries);
    let among = harness::measure(&large, &queries);
    // Floors below what the ranking measures (docs/performance.md).
    assert!(alone.recall_at_5 >= 0.9, "{alone:?}");
    assert!(alone.mrr >= 0.85, "{alone:?}");
    assert!(among.recall_at_5 >= 0.75, "{among:?}");
    assert!(among.mrr >= 0.65, "{among:?}");
    runtime.shutdown().await;
}
