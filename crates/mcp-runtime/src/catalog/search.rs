//! Ranked search over a catalog's tools ([`Catalog::search`]): for a host with more
//! tools than a model can be shown, the few that match what it asks for.
//!
//! Ranking is BM25F (Robertson and Zaragoza's field-weighted BM25) over five fields
//! of each tool: its names (qualified and original, split on `_`, `-` and
//! camelCase), its title, its description, its input schema's property names and
//! descriptions, and its server's name and instructions (which every tool of the
//! server shares). Before any score, a name pass puts the
//! tools whose qualified name, or original name, is the query itself (case and `-`
//! against `_` aside) first.
//!
//! Invariants:
//! 1. Each server's tools have an index of their own ([`ServerIndex`]), built on the
//!    first search that needs it and kept with the server's entry of the catalog. A
//!    catalog built from another shares the entries of the servers whose tools it did
//!    not change, and so their indexes: a server's change re-indexes that server's
//!    tools only. Nothing is indexed while a catalog is built, so no call waits on it.
//! 2. Statistics that span servers (how many tools hold a term, the fields' average
//!    lengths) are summed over the searched servers' indexes at query time, so a
//!    score does not depend on which servers were indexed when.
//! 3. Ranking is total and stable: exact name matches first, then by score, then by
//!    qualified name.

use std::{
    cmp::Ordering,
    collections::{BinaryHeap, HashMap, HashSet},
    sync::Arc,
};

use imbl::OrdMap;

use super::QualifiedTool;

/// One tool a search found, with what ranked it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SearchHit {
    /// The tool, as the catalog holds it.
    pub tool: Arc<QualifiedTool>,
    /// Its BM25F score for the query (0 for a tool only its name found).
    pub score: f64,
    /// Whether its qualified or original name is the query itself (case, and `-`
    /// against `_`, aside); these rank first.
    pub exact_name: bool,
}

/// The fields a tool's terms are counted in, each with its own weight and length
/// normalisation.
const FIELDS: usize = 4;
const NAME: usize = 0;
const TITLE: usize = 1;
const DESCRIPTION: usize = 2;
const PARAMETERS: usize = 3;

/// Each field's weight: a term in a tool's name says more than one in its
/// description, and one in a parameter's description less.
const WEIGHTS: [f64; FIELDS] = [3.0, 2.0, 1.0, 0.6];
/// Each field's length normalisation (BM25's `b`).
const LENGTH_NORMALISATION: [f64; FIELDS] = [0.3, 0.5, 0.75, 0.75];
/// The weight of a term of the server's name, which every tool of the server holds.
const SERVER_WEIGHT: f64 = 0.5;
/// The weight of a term of the server's instructions, which every tool of the server
/// holds too: less than its name's, as instructions run long and cover much.
const INSTRUCTIONS_WEIGHT: f64 = 0.25;
/// BM25's term-frequency saturation.
const K1: f64 = 1.2;

/// Words too common in tool descriptions and queries to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// A term's count in one tool's fields (saturating at 255).
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    counts: [u8; FIELDS],
}

/// The index of one server's tools (invariant 1). Documents are the server's tools
/// in the order of its entry's names.
#[derive(Debug, Default)]
pub(super) struct ServerIndex {
    /// Each term's postings, by document.
    postings: HashMap<Box<str>, Vec<Posting>>,
    /// Each document's field lengths, in terms.
    lengths: Vec<[u16; FIELDS]>,
    /// The sum of each field's lengths over the documents.
    total_lengths: [u64; FIELDS],
    /// The terms of the server's name and instructions, each with its weight.
    server_terms: HashMap<Box<str>, f64>,
    /// Each document's names, normalised (see [`normalised_name`]), to the documents.
    names: HashMap<Box<str>, Vec<u32>>,
}

impl ServerIndex {
    /// The index of `server`'s tools `names`, looked up in `tools`, with the server's
    /// `instructions`.
    pub(super) fn build(
        server: &str,
        instructions: Option<&str>,
        names: &[Arc<str>],
        tools: &OrdMap<Arc<str>, Arc<QualifiedTool>>,
    ) -> Self {
        let mut server_terms: HashMap<Box<str>, f64> = unique_terms(server)
            .into_iter()
            .map(|term| (term, SERVER_WEIGHT))
            .collect();
        for term in unique_terms(instructions.unwrap_or_default()) {
            server_terms.entry(term).or_insert(INSTRUCTIONS_WEIGHT);
        }
        server_terms.shrink_to_fit();
        let mut index = Self {
            server_terms,
            ..Self::default()
        };
        let mut counts: HashMap<String, [u8; FIELDS]> = HashMap::new();
        for (doc, name) in names.iter().enumerate() {
            let tool = &tools[name];
            let doc = u32::try_from(doc).expect("a server has fewer than 2^32 tools");
            let mut lengths = [0u16; FIELDS];
            let mut count = |field: usize, text: &str| {
                terms(text, |term| {
                    let counts = match counts.get_mut(term) {
                        Some(counts) => counts,
                        None => counts.entry(term.to_owned()).or_default(),
                    };
                    counts[field] = counts[field].saturating_add(1);
                    lengths[field] = lengths[field].saturating_add(1);
                });
            };
            count(NAME, &tool.qualified_name);
            count(NAME, &tool.tool.name);
            if let Some(title) = tool.tool.title.as_deref().or_else(|| {
                let annotations = tool.tool.annotations.as_ref()?;
                annotations.title.as_deref()
            }) {
                count(TITLE, title);
            }
            if let Some(description) = tool.tool.description.as_deref() {
                count(DESCRIPTION, description);
            }
            if let Some(serde_json::Value::Object(properties)) =
                tool.tool.input_schema.get("properties")
            {
                for (property, schema) in properties {
                    count(PARAMETERS, property);
                    if let Some(description) = schema.get("description").and_then(|d| d.as_str()) {
                        count(PARAMETERS, description);
                    }
                }
            }
            for (term, counts) in counts.drain() {
                let posting = Posting { doc, counts };
                match index.postings.get_mut(term.as_str()) {
                    Some(postings) => postings.push(posting),
                    None => {
                        index.postings.insert(term.into_boxed_str(), vec![posting]);
                    }
                }
            }
            for (total, length) in index.total_lengths.iter_mut().zip(lengths) {
                *total += u64::from(length);
            }
            index.lengths.push(lengths);
            for name in [&*tool.qualified_name, &*tool.tool.name] {
                let docs = index.names.entry(normalised_name(name).into()).or_default();
                if docs.last() != Some(&doc) {
                    docs.push(doc);
                }
            }
        }
        for postings in index.postings.values_mut() {
            postings.shrink_to_fit();
        }
        index.postings.shrink_to_fit();
        index.names.shrink_to_fit();
        index
    }

    /// The weight of `term` as one of the server's own, if it is.
    fn server_weight(&self, term: &str) -> Option<f64> {
        self.server_terms.get(term).copied()
    }

    fn documents(&self) -> usize {
        self.lengths.len()
    }

    /// How many of the server's tools hold `term` in any field.
    fn frequency(&self, term: &str) -> usize {
        if self.server_weight(term).is_some() {
            self.documents()
        } else {
            self.postings.get(term).map_or(0, Vec::len)
        }
    }
}

/// What a query scores against: its terms and the searched servers' statistics
/// (invariant 2).
struct Scoring {
    /// Each distinct term of the query with its inverse document frequency.
    terms: Vec<(String, f64)>,
    /// Each field's average length over the searched tools.
    average_lengths: [f64; FIELDS],
}

impl Scoring {
    fn new(query: &str, indexes: &[&ServerIndex]) -> Self {
        let documents: usize = indexes.iter().map(|index| index.documents()).sum();
        let mut average_lengths = [0.0; FIELDS];
        for (field, average) in average_lengths.iter_mut().enumerate() {
            let total: u64 = indexes.iter().map(|index| index.total_lengths[field]).sum();
            *average = if documents == 0 {
                1.0
            } else {
                (total as f64 / documents as f64).max(1.0)
            };
        }
        let terms = unique_terms(query)
            .into_iter()
            .map(|term| {
                let frequency: usize = indexes.iter().map(|index| index.frequency(&term)).sum();
                let (n, df) = (documents as f64, frequency as f64);
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                (term.into_string(), idf)
            })
            .collect();
        Self {
            terms,
            average_lengths,
        }
    }

    /// The BM25F score of each of `index`'s documents (0 for one that holds no term),
    /// into `scores`.
    fn scores(&self, index: &ServerIndex, scores: &mut Vec<f64>) {
        scores.clear();
        scores.resize(index.documents(), 0.0);
        for (term, idf) in &self.terms {
            let server = index.server_weight(term);
            let postings = index
                .postings
                .get(term.as_str())
                .map_or(&[][..], Vec::as_slice);
            if let Some(server) = server {
                // Every tool holds the server's name and instructions: one weighted
                // count each, beside the counts of its own fields.
                let mut own = postings.iter().peekable();
                for doc in 0..index.documents() as u32 {
                    let counts = own.next_if(|posting| posting.doc == doc).map(|p| p.counts);
                    let weighted = self.weighted(index, doc, counts) + server;
                    scores[doc as usize] += idf * weighted / (K1 + weighted);
                }
            } else {
                for posting in postings {
                    let weighted = self.weighted(index, posting.doc, Some(posting.counts));
                    scores[posting.doc as usize] += idf * weighted / (K1 + weighted);
                }
            }
        }
    }

    /// A term's counts in a document, weighted and length-normalised per field.
    fn weighted(&self, index: &ServerIndex, doc: u32, counts: Option<[u8; FIELDS]>) -> f64 {
        let Some(counts) = counts else {
            return 0.0;
        };
        let lengths = &index.lengths[doc as usize];
        (0..FIELDS)
            .filter(|&field| counts[field] > 0)
            .map(|field| {
                let b = LENGTH_NORMALISATION[field];
                let relative = f64::from(lengths[field]) / self.average_lengths[field];
                WEIGHTS[field] * f64::from(counts[field]) / (1.0 - b + b * relative)
            })
            .sum()
    }
}

/// A candidate in the top-k heap: ordered so that the heap's top is the worst kept
/// (invariant 3).
struct Ranked {
    exact_name: bool,
    score: f64,
    tool: Arc<QualifiedTool>,
}

impl Ranked {
    fn rank(&self, other: &Self) -> Ordering {
        // Better first: an exact name, a higher score, then the lower name.
        other
            .exact_name
            .cmp(&self.exact_name)
            .then(other.score.total_cmp(&self.score))
            .then_with(|| self.tool.qualified_name.cmp(&other.tool.qualified_name))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// The best `limit` of `servers`' tools for `query`, best first (invariant 3); each
/// server given as its index, its tools' names (the index's documents) and the
/// catalog's tools.
pub(super) fn search<'a>(
    query: &str,
    limit: usize,
    servers: impl Iterator<Item = (&'a ServerIndex, &'a [Arc<str>])>,
    tools: &OrdMap<Arc<str>, Arc<QualifiedTool>>,
) -> Vec<SearchHit> {
    if limit == 0 {
        return Vec::new();
    }
    let servers: Vec<(&ServerIndex, &[Arc<str>])> = servers.collect();
    let indexes: Vec<&ServerIndex> = servers.iter().map(|(index, _)| *index).collect();
    let scoring = Scoring::new(query, &indexes);
    let name = normalised_name(query.trim());
    let documents: usize = indexes.iter().map(|index| index.documents()).sum();
    let mut heap: BinaryHeap<Ranked> =
        BinaryHeap::with_capacity(limit.min(documents).saturating_add(1));
    let mut scores = Vec::new();
    for (index, names) in servers {
        scoring.scores(index, &mut scores);
        // A blank query names no tool (a tool listed with an empty name included).
        let exact = if name.is_empty() {
            &[][..]
        } else {
            index
                .names
                .get(name.as_str())
                .map_or(&[][..], Vec::as_slice)
        };
        for (doc, &score) in scores.iter().enumerate() {
            let exact_name = exact.contains(&(doc as u32));
            if score <= 0.0 && !exact_name {
                continue;
            }
            if heap.len() == limit && !exact_name {
                // Most tools rank below the worst kept: no candidate for them.
                let worst = heap.peek().expect("the heap is full");
                if worst.exact_name || score < worst.score {
                    continue;
                }
            }
            let candidate = Ranked {
                exact_name,
                score,
                tool: tools[&names[doc]].clone(),
            };
            if heap.len() == limit {
                let worst = heap.peek().expect("the heap is full");
                if candidate >= *worst {
                    continue;
                }
                heap.pop();
            }
            heap.push(candidate);
        }
    }
    heap.into_sorted_vec()
        .into_iter()
        .map(|ranked| SearchHit {
            tool: ranked.tool,
            score: ranked.score,
            exact_name: ranked.exact_name,
        })
        .collect()
}

/// A name as the name pass compares it: lowercase, `-` as `_`.
fn normalised_name(name: &str) -> String {
    name.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == '-' { '_' } else { c })
        .collect()
}

/// `text`'s distinct terms, in order of first appearance.
fn unique_terms(text: &str) -> Vec<Box<str>> {
    let mut seen: HashSet<Box<str>> = HashSet::new();
    let mut unique: Vec<Box<str>> = Vec::new();
    terms(text, |term| {
        if !seen.contains(term) {
            seen.insert(term.into());
            unique.push(term.into());
        }
    });
    unique
}

/// Hands each term of `text` to `each`: its words split at every character that is
/// not a letter or a digit and at camelCase boundaries (`listFiles`, `HTTPServer`),
/// lowercased, the plural `s` taken off, stop words left out.
fn terms(text: &str, mut each: impl FnMut(&str)) {
    let mut term = String::new();
    let mut emit = |term: &mut String| {
        stem(term);
        if !term.is_empty() && !STOP_WORDS.contains(&term.as_str()) {
            each(term);
        }
        term.clear();
    };
    let mut chars = text.chars().peekable();
    let mut before: Option<char> = None;
    while let Some(here) = chars.next() {
        if !here.is_alphanumeric() {
            emit(&mut term);
            before = None;
            continue;
        }
        if let Some(before) = before {
            let after = chars.peek().copied();
            let boundary = (before.is_lowercase() && here.is_uppercase())
                || (before.is_uppercase()
                    && here.is_uppercase()
                    && after.is_some_and(char::is_lowercase));
            if boundary {
                emit(&mut term);
            }
        }
        if here.is_ascii() {
            term.push(here.to_ascii_lowercase());
        } else {
            term.extend(here.to_lowercase());
        }
        before = Some(here);
    }
    emit(&mut term);
}

/// Takes a plural ending off `term`: `files` → `file`, `entries` → `entry`; words
/// whose `s` is not a plural's (`process`, `status`, `this`) are kept.
fn stem(term: &mut String) {
    if term.len() > 4 && term.ends_with("ies") {
        term.truncate(term.len() - 3);
        term.push('y');
    } else if term.len() > 3
        && term.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| term.ends_with(end))
    {
        term.pop();
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, |term| out.push(term.to_owned()));
        out
    }

    #[test]
    fn names_split_on_separators_and_camel_case_and_lose_their_plurals() {
        assert_eq!(all("mcp__fs__read_file"), ["mcp", "fs", "read", "file"]);
        assert_eq!(all("listFiles"), ["list", "file"]);
        assert_eq!(
            all("HTTPServer get-Entries"),
            ["http", "server", "get", "entry"]
        );
        assert_eq!(all("the status of a process"), ["status", "process"]);
        assert_eq!(all("Ünïcode wörds"), ["ünïcode", "wörd"]);
    }

    #[test]
    fn names_compare_without_case_and_with_dashes_as_underscores() {
        assert_eq!(normalised_name("Read-File"), "read_file");
    }
}
