//! How well `Catalog::search` ranks, over real catalogs: server-everything,
//! server-filesystem and server-memory (pinned in `peers/`) and the fixture, alone and
//! among a synthetic catalog of 2,000 tools made from their descriptions' words. Shared
//! by the `search_quality` test (which holds the figures to floors) and bench (which
//! prints them).

#![allow(dead_code, reason = "the test and the bench use different parts")]

use std::path::{Path, PathBuf};

use mcp_runtime::{
    Catalog, Config, ListedTool, Runtime, ServerConfig, StartOptions,
    host::{Elicitation, ElicitationModes, HandlerFuture, HostHandlers},
    model::{ElicitRequestParams, ElicitResult, ElicitationAction, Tool},
};

/// One labelled query: what is asked, and the qualified names that answer it.
pub struct Labelled {
    pub query: String,
    pub expect: Vec<String>,
}

/// The labelled queries of `search/queries.json`.
pub fn queries() -> Vec<Labelled> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("search/queries.json");
    let text = std::fs::read_to_string(&path).expect("the labelled queries");
    let file: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    file["queries"]
        .as_array()
        .expect("a list of queries")
        .iter()
        .map(|entry| Labelled {
            query: entry["query"].as_str().expect("a query").to_owned(),
            expect: entry["expect"]
                .as_array()
                .expect("expected names")
                .iter()
                .map(|name| name.as_str().expect("a name").to_owned())
                .collect(),
        })
        .collect()
}

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/node_modules/@modelcontextprotocol")
}

/// A host that takes both kinds of question, as a capable host does: servers list it
/// the tools that ask (server-everything's elicitation tools). Searches ask nothing.
struct Declining;

impl Elicitation for Declining {
    fn modes(&self) -> ElicitationModes {
        ElicitationModes {
            form: true,
            url: true,
        }
    }

    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async { ElicitResult::new(ElicitationAction::Decline) })
    }
}

/// A runtime of the real servers, every one required: server-everything,
/// server-filesystem (of `dir/files`), server-memory (its file in `dir`) and the
/// fixture (`fixture`, its default tools), for a host that takes elicitation.
pub async fn real_servers(dir: &Path, fixture: &Path) -> Runtime {
    let node = |name: &str, script: &str, args: &[&str]| {
        let script = peers().join(script);
        assert!(
            script.exists(),
            "{} is missing: run scripts/install-peers (scripts/test does)",
            script.display()
        );
        let mut argv = vec![script.to_str().unwrap().to_owned()];
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        let mut server = ServerConfig::stdio(name, "node", argv);
        server.required = true;
        server
    };
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let mut memory = node("memory", "server-memory/dist/index.js", &[]);
    if let mcp_runtime::config::TransportConfig::Stdio(stdio) = &mut memory.transport {
        stdio.env.insert(
            "MEMORY_FILE_PATH".into(),
            dir.join("memory.jsonl").to_str().unwrap().into(),
        );
    }
    let mut fixture = ServerConfig::stdio("fixture", fixture.to_str().unwrap(), vec![]);
    fixture.required = true;
    let mut config = Config::default();
    for server in [
        node("everything", "server-everything/dist/index.js", &["stdio"]),
        node(
            "filesystem",
            "server-filesystem/dist/index.js",
            &[files.to_str().unwrap()],
        ),
        memory,
        fixture,
    ] {
        config.servers.insert(server.name.clone(), server);
    }
    let options = StartOptions::new()
        .wait_for_all()
        .with_host(HostHandlers::new().with_elicitation(Declining));
    Runtime::start(config, options)
        .await
        .expect("the real servers start")
}

/// `catalog` among `count` synthetic tools on servers of 100, each described by 10 to
/// 25 words drawn from the real descriptions (as often as they occur there) and named
/// by a real name's first word (its verb: `get`, `read`, `create`…) and a word of its
/// own description: a large catalog whose words are the real ones, so that every
/// query has many near misses.
pub fn with_synthetic(catalog: &Catalog, count: usize) -> Catalog {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let mut name_words = Vec::new();
    let mut description_words = Vec::new();
    for tool in catalog.tools() {
        name_words.extend(words(&tool.tool.name).into_iter().take(1));
        description_words.extend(words(tool.tool.description.as_deref().unwrap_or_default()));
    }
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut draw = |len: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % len as u64) as usize
    };
    let empty = std::sync::Arc::new(serde_json::Map::new());
    let servers: Vec<(ServerConfig, Vec<ListedTool>)> = (0..count.div_ceil(100))
        .map(|server| {
            let tools = (0..100.min(count - server * 100))
                .map(|index| {
                    let length = 10 + draw(16);
                    let description: Vec<&str> = (0..length)
                        .map(|_| description_words[draw(description_words.len())].as_str())
                        .collect();
                    // Named from a real name's first word and a word of its own
                    // description, as a real tool's name says what it does.
                    let name = format!(
                        "{}_{}_{index}",
                        name_words[draw(name_words.len())],
                        description[draw(description.len())]
                    );
                    ListedTool::from(Tool::new(name, description.join(" "), empty.clone()))
                })
                .collect();
            (
                ServerConfig::stdio(format!("synthetic-{server:02}"), "unused", vec![]),
                tools,
            )
        })
        .collect();
    let synthetic = Catalog::build(
        &Catalog::default(),
        servers
            .iter()
            .map(|(config, tools)| (config, tools.as_slice())),
    );
    catalog.joined(&synthetic)
}

/// Recall at 1 and 5, and the mean reciprocal rank (over the first 10), of `queries`
/// on `catalog`.
#[derive(Debug)]
pub struct Figures {
    pub queries: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub mrr: f64,
    /// The queries whose answer was not in the first 5, with what came first.
    pub misses: Vec<(String, Vec<String>)>,
}

pub fn measure(catalog: &Catalog, queries: &[Labelled]) -> Figures {
    let (mut at_1, mut at_5, mut reciprocal) = (0, 0, 0.0);
    let mut misses = Vec::new();
    for labelled in queries {
        let hits = catalog.search(&labelled.query, 10);
        let names: Vec<String> = hits
            .iter()
            .map(|hit| hit.tool.qualified_name.to_string())
            .collect();
        let rank = names.iter().position(|name| labelled.expect.contains(name));
        match rank {
            Some(rank) => {
                at_1 += usize::from(rank == 0);
                at_5 += usize::from(rank < 5);
                reciprocal += 1.0 / (rank + 1) as f64;
                if rank >= 5 {
                    misses.push((labelled.query.clone(), names));
                }
            }
            None => misses.push((labelled.query.clone(), names)),
        }
    }
    let count = queries.len() as f64;
    Figures {
        queries: queries.len(),
        recall_at_1: at_1 as f64 / count,
        recall_at_5: at_5 as f64 / count,
        mrr: reciprocal / count,
        misses,
    }
}

/// Every tool's qualified name, and its original name when no other tool has it, as a
/// query: how many rank their tool first, of how many, and those that do not.
pub fn exact_names(catalog: &Catalog) -> (usize, usize, Vec<String>) {
    let mut originals: std::collections::HashMap<String, usize> = Default::default();
    for tool in catalog.tools() {
        let name = tool.tool.name.to_lowercase().replace('-', "_");
        *originals.entry(name).or_default() += 1;
    }
    let (mut first, mut total, mut misses) = (0, 0, Vec::new());
    for tool in catalog.tools() {
        let original = tool.tool.name.to_string();
        let unique = originals[&original.to_lowercase().replace('-', "_")] == 1;
        let mut queries = vec![tool.qualified_name.to_string()];
        if unique {
            queries.push(original);
        }
        for query in queries {
            total += 1;
            let hits = catalog.search(&query, 1);
            if hits.first().map(|hit| &hit.tool.qualified_name) == Some(&tool.qualified_name) {
                first += 1;
            } else {
                misses.push(query);
            }
        }
    }
    (first, total, misses)
}
