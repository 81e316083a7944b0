//! Prints how well tool search ranks over real catalogs (server-everything,
//! server-filesystem, server-memory and the fixture, pinned in `peers/`), alone and
//! among 2,000 synthetic tools made of their words: recall at 1 and 5 and the mean
//! reciprocal rank of the labelled queries of `search/queries.json`, and how many
//! tools their own name finds first.
//!
//! Run with `cargo bench -p mcp-runtime-fixtures --bench search_quality` (after
//! `scripts/install-peers`).

#[path = "../tests/search_quality_harness.rs"]
mod harness;

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("search-quality-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let fixture = std::path::Path::new(env!("CARGO_BIN_EXE_mcp-fixture"));
    let runtime = harness::real_servers(&dir, fixture).await;
    let real = runtime.catalog();
    let large = harness::with_synthetic(&real, 2000);
    let queries = harness::queries();
    println!("| catalog | tools | queries | recall@1 | recall@5 | MRR | names found first |");
    println!("|---|---|---|---|---|---|---|");
    for (label, catalog) in [("real servers", &*real), ("real + 2,000 synthetic", &large)] {
        let figures = harness::measure(catalog, &queries);
        let (first, total, _) = harness::exact_names(catalog);
        println!(
            "| {label} | {} | {} | {:.2} | {:.2} | {:.2} | {first} of {total} |",
            catalog.len(),
            figures.queries,
            figures.recall_at_1,
            figures.recall_at_5,
            figures.mrr,
        );
        for (query, top) in &figures.misses {
            eprintln!(
                "{label}: not in the first 5: {query:?} → {:?}",
                &top[..top.len().min(5)]
            );
        }
    }
    runtime.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
