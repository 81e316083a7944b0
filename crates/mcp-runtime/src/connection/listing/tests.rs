//! Tests of `tools/list` handling: a raw JSON-RPC peer in process, and properties.

use rmcp::{ServiceExt, service::RunningService};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream},
    sync::mpsc,
};

use super::*;
use crate::{model::ClientConfig, protocol::client_config};

/// What the scripted server received.
#[derive(Debug, PartialEq)]
enum Received {
    /// A `tools/list` request with this id and cursor.
    List { id: Value, cursor: Option<String> },
    /// `notifications/cancelled` for this request id.
    Cancelled { id: Value },
}

/// A server that speaks raw JSON-RPC on an in-process pipe: it answers
/// `initialize`, then the n-th `tools/list` with `pages[n]`, JSON text sent exactly
/// as given; it never answers a `tools/list` beyond the last page.
async fn scripted_server(
    pages: Vec<String>,
) -> (
    RunningService<RoleClient, ClientConfig>,
    mpsc::UnboundedReceiver<Received>,
) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (received, receiver) = mpsc::unbounded_channel();
    tokio::spawn(answer(server_end, pages, received));
    let client = client_config(&crate::host::HostHandlers::default())
        .serve(tokio::io::split(client_end))
        .await
        .expect("the handshake with the scripted server succeeds");
    (client, receiver)
}

async fn answer(
    server_end: DuplexStream,
    pages: Vec<String>,
    received: mpsc::UnboundedSender<Received>,
) {
    let (read, mut write) = tokio::io::split(server_end);
    let mut lines = BufReader::new(read).lines();
    let mut pages = pages.into_iter();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).expect("the client sends JSON");
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let result = match message["method"].as_str() {
            Some("initialize") => Some(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"0"}}"#
                    .to_owned(),
            ),
            Some("tools/list") => {
                let cursor = message["params"]["cursor"].as_str().map(str::to_owned);
                let _ = received.send(Received::List {
                    id: id.clone(),
                    cursor,
                });
                pages.next()
            }
            Some("notifications/cancelled") => {
                let id = message["params"]["requestId"].clone();
                let _ = received.send(Received::Cancelled { id });
                None
            }
            _ => None,
        };
        if let Some(result) = result {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n");
            if write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// One page's result as JSON text: `tools` (JSON text of the array's items) and
/// the next cursor.
fn page(tools: &str, next_cursor: Option<&str>) -> String {
    match next_cursor {
        Some(cursor) => format!(r#"{{"tools":[{tools}],"nextCursor":"{cursor}"}}"#),
        None => format!(r#"{{"tools":[{tools}]}}"#),
    }
}

fn good(name: &str) -> String {
    format!(r#"{{"name":"{name}","inputSchema":{{"type":"object"}}}}"#)
}

async fn list(pages: Vec<String>) -> Result<Vec<Tool>, ListToolsError> {
    list_with_hints(pages).await.map(|listing| {
        listing
            .tools
            .into_iter()
            .map(|listed| std::sync::Arc::unwrap_or_clone(listed.tool))
            .collect()
    })
}

async fn list_with_hints(pages: Vec<String>) -> Result<Listing, ListToolsError> {
    let (client, _received) = scripted_server(pages).await;
    let sent = AtomicUsize::new(0);
    list_tools(
        client.peer(),
        &Cancellations::new(client.peer().clone()),
        "scripted",
        bounds(Duration::from_secs(30)),
        &sent,
    )
    .await
}

/// The default bounds, with `page_timeout`.
fn bounds(page_timeout: Duration) -> Bounds {
    Bounds {
        page_timeout,
        max_tools: crate::config::DEFAULT_MAX_TOOLS,
    }
}

fn names<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> Vec<&'a str> {
    tools.into_iter().map(|tool| tool.name.as_ref()).collect()
}

#[tokio::test]
async fn a_credential_a_tool_quotes_is_masked_in_the_listing() {
    let _sent = crate::redact::register("ls-bearer-4e2a-token").unwrap();
    let tool = r#"{"name":"t","description":"send Bearer ls-bearer-4e2a-token","inputSchema":{"type":"object","properties":{"token":{"default":"ls-bearer-4e2a-token"}}}}"#;
    let tools = list(vec![page(tool, None)]).await.unwrap();
    assert_eq!(tools[0].description.as_deref(), Some("send Bearer *****"));
    assert_eq!(
        tools[0].input_schema["properties"]["token"]["default"],
        "*****"
    );
}

#[tokio::test]
async fn a_tool_whose_input_schema_is_not_an_object_is_left_out_and_the_rest_listed() {
    let tools = [
        good("first"),
        r#"{"name":"string","inputSchema":"object"}"#.to_owned(),
        r#"{"name":"null","inputSchema":null}"#.to_owned(),
        r#"{"name":"array","inputSchema":[]}"#.to_owned(),
        r#"{"name":"missing"}"#.to_owned(),
        good("last"),
    ];
    let tools = list(vec![page(&tools.join(","), None)]).await.unwrap();
    assert_eq!(names(&tools), ["first", "last"]);
}

#[tokio::test]
async fn a_tool_without_a_usable_name_is_left_out_and_the_rest_listed() {
    let tools = [
        r#"{"name":"","inputSchema":{}}"#.to_owned(),
        r#"{"name":7,"inputSchema":{}}"#.to_owned(),
        r#"{"inputSchema":{}}"#.to_owned(),
        r#""a tool that is a string""#.to_owned(),
        good("kept"),
    ];
    let tools = list(vec![page(&tools.join(","), None)]).await.unwrap();
    assert_eq!(names(&tools), ["kept"]);
}

#[tokio::test]
async fn the_first_of_several_tools_with_one_name_is_kept() {
    let first = r#"{"name":"twice","description":"first","inputSchema":{}}"#;
    let second = r#"{"name":"twice","description":"second","inputSchema":{}}"#;
    let third = r#"{"name":"twice","description":"third","inputSchema":{}}"#;
    let pages = vec![
        page(&[first, &good("other"), second].join(","), Some("2")),
        page(third, None),
    ];
    let tools = list(pages).await.unwrap();
    assert_eq!(names(&tools), ["twice", "other"]);
    assert_eq!(tools[0].description.as_deref(), Some("first"));
}

#[test]
fn a_tools_execution_is_kept_beside_what_rmcp_reads() {
    use crate::catalog::TaskSupport;

    let listed = |execution: Value| {
        usable_tool(&json!({"name": "t", "inputSchema": {}, "execution": execution})).unwrap()
    };
    let required = listed(json!({"taskSupport": "required"}));
    assert_eq!(
        required.execution(),
        json!({"taskSupport": "required"}).as_object()
    );
    assert_eq!(required.task_support(), TaskSupport::Required);
    assert_eq!(
        listed(json!({"taskSupport": "optional"})).task_support(),
        TaskSupport::Optional
    );
    assert_eq!(
        listed(json!({"taskSupport": "sometimes"})).task_support(),
        TaskSupport::Forbidden
    );
    assert_eq!(listed(json!({})).task_support(), TaskSupport::Forbidden);
    // An `execution` that is not an object says nothing of how the tool runs; the
    // tool stays usable, and its definition keeps it as listed.
    let odd = listed(json!("required"));
    assert_eq!(odd.task_support(), TaskSupport::Forbidden);
    assert_eq!(odd.execution(), None);
    assert_eq!(odd.unmodelled.as_deref().unwrap()["execution"], "required");
    let plain = usable_tool(&json!({"name": "t", "inputSchema": {}})).unwrap();
    assert_eq!(plain.unmodelled, None);
}

#[test]
fn what_a_newer_revision_adds_to_a_tool_is_kept_whether_read_from_text_or_json() {
    let listed = json!({
        "name": "t", "inputSchema": {},
        "annotations": {"readOnlyHint": true, "futureHint": 1},
        "futureField": {"n": [1, 2]}
    });
    let from_json = usable_tool(&listed).unwrap();
    let text = listed.to_string();
    let from_text = Entry::Raw(serde_json::from_str(&text).unwrap())
        .read(1)
        .unwrap();
    assert_eq!(from_json, from_text);
    assert_eq!(
        serde_json::to_value(from_text.definition()).unwrap(),
        listed
    );
}

fn left_out(raw: &str) -> String {
    let mut listed = ListedTools::default();
    let first = good("first");
    listed
        .push(Entry::Raw(serde_json::from_str(&first).unwrap()), None)
        .unwrap();
    let from_text = listed
        .push(Entry::Raw(serde_json::from_str(raw).unwrap()), None)
        .unwrap_err();
    // Read from its text or as a value, the entry is left out for the same reason.
    let mut from_value = ListedTools::default();
    from_value
        .push(Entry::Parsed(serde_json::from_str(&first).unwrap()), None)
        .unwrap();
    let from_value = from_value
        .push(Entry::Parsed(serde_json::from_str(raw).unwrap()), None)
        .unwrap_err();
    assert_eq!(from_text, from_value);
    from_text.to_string()
}

#[test]
fn a_left_out_tool_is_named_with_the_reason() {
    let cases = [
        (
            r#"{"name":"s","inputSchema":"object"}"#,
            "tool `s`: its `inputSchema` is a string, not a JSON object",
        ),
        (
            r#"{"name":"n","inputSchema":null}"#,
            "tool `n`: its `inputSchema` is null, not a JSON object",
        ),
        (r#"{"name":"m"}"#, "tool `m`: it has no `inputSchema`"),
        (
            r#"{"name":"","inputSchema":{}}"#,
            "tool number 2 in the listing: its `name` is empty",
        ),
        (
            r#"{"name":["x"],"inputSchema":{}}"#,
            "tool number 2 in the listing: its `name` is an array, not a string",
        ),
        (
            r#"{"inputSchema":{}}"#,
            "tool number 2 in the listing: it has no `name`",
        ),
        (
            "null",
            "tool number 2 in the listing: it is null, not a JSON object",
        ),
        (
            // A tool's fields in order: what serde would read as a `Tool`.
            r#"["t",null,null,{},null,null,null,null]"#,
            "tool number 2 in the listing: it is an array, not a JSON object",
        ),
        (
            r#"{"name":"a","inputSchema":{},"annotations":"read-only"}"#,
            "tool `a`: its `annotations` does not have the shape the MCP schema gives it",
        ),
        (
            r#"{"name":"first","inputSchema":{}}"#,
            "tool `first`: an earlier tool has the same name; the first is kept",
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(left_out(raw), expected, "{raw}");
    }
}

#[test]
fn a_warning_quotes_a_hostile_name_escaped_and_cut() {
    let name = format!("line\nbreak`{}", "x".repeat(100));
    let raw = json!({"name": name, "inputSchema": 7}).to_string();
    let message = left_out(&raw);
    let expected_name: String = format!("line\\nbreak`{}…", "x".repeat(LABEL_CHARS - 11));
    assert_eq!(
        message,
        format!("tool `{expected_name}`: its `inputSchema` is a number, not a JSON object")
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_tools_list_result_fails_the_listing() {
    let cases = [
        ("{}", "has no `tools` array"),
        (
            r#"{"tools":"none"}"#,
            "has `tools` that is a string, not an array",
        ),
        (r#"[1]"#, "is an array, not a JSON object"),
        (
            r#"{"tools":[],"nextCursor":5}"#,
            "has a `nextCursor` that is a number, not a string",
        ),
    ];
    for (answer, expected) in cases {
        let error = list(vec![answer.to_owned()]).await.unwrap_err();
        assert!(
            matches!(&error, ListToolsError::Malformed { problem } if problem == expected),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "the `tools/list` answer {expected} (the server does not follow the MCP schema; report it to its author)"
            )
        );
    }
}

#[test]
fn an_answer_that_is_not_json_keeps_the_parsers_error_as_its_source() {
    let error = Page::parse(r#"{"tools": [1,"#).unwrap_err();
    let ListToolsError::Unreadable { source } = &error else {
        panic!("not unreadable: {error:?}");
    };
    assert!(source.is_eof(), "{source}");
    let cause = std::error::Error::source(&error).expect("a source");
    assert!(cause.is::<Arc<serde_json::Error>>(), "{cause:?}");
    // Where the text breaks is said once, after what is wrong and what to do.
    assert_eq!(
        crate::error::chain(&error),
        "the `tools/list` answer cannot be read (the server does not follow the MCP schema; report it to its author): EOF while parsing a value at line 1 column 13"
    );
}

/// The warnings about left-out tools among `events`, in order.
fn left_out_warnings(events: &crate::test_events::Events) -> Vec<String> {
    events
        .lines()
        .into_iter()
        .filter(|line| line.starts_with("left out"))
        .collect()
}

#[tokio::test]
async fn left_out_tools_are_named_in_warnings_up_to_a_limit() {
    let events = crate::test_events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());
    let mut tools: Vec<String> = (0..MAX_WARNINGS + 2)
        .map(|n| format!(r#"{{"name":"bad{n}","inputSchema":"object"}}"#))
        .collect();
    tools.push(good("good"));
    let tools = list(vec![page(&tools.join(","), None)]).await.unwrap();
    assert_eq!(names(&tools), ["good"]);
    let warnings = left_out_warnings(&events);
    assert_eq!(warnings.len(), MAX_WARNINGS + 1, "{warnings:#?}");
    assert_eq!(
        warnings[0],
        "left out a tool the server listed server=\"scripted\" tool=`bad0` reason=its `inputSchema` is a string, not a JSON object"
    );
    assert_eq!(
        warnings[MAX_WARNINGS],
        format!(
            "left out more tools the server listed (only the first {MAX_WARNINGS} are named) server=\"scripted\" count=2"
        )
    );
}

#[tokio::test]
async fn a_large_page_read_apart_counts_toward_the_same_warnings() {
    let events = crate::test_events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());
    let bad = |n: usize| format!(r#"{{"name":"bad{n}","inputSchema":"object"}}"#);
    // Past the size from which a page is read on a task of its own.
    let long = format!(
        r#"{{"name":"long","description":"{}","inputSchema":{{}}}}"#,
        "d".repeat(READ_APART_BYTES)
    );
    let mut large: Vec<String> = (0..MAX_WARNINGS - 3).map(bad).collect();
    large.extend([good("a"), long]);
    let small: Vec<String> = (MAX_WARNINGS - 3..MAX_WARNINGS + 2).map(bad).collect();
    let large = page(&large.join(","), Some("next"));
    assert!(large.len() > READ_APART_BYTES);
    let tools = list(vec![
        large,
        page(&[small.join(","), good("b")].join(","), None),
    ])
    .await
    .unwrap();
    assert_eq!(names(&tools), ["a", "long", "b"]);
    let warnings = left_out_warnings(&events);
    assert_eq!(warnings.len(), MAX_WARNINGS + 1, "{warnings:#?}");
    assert!(warnings[MAX_WARNINGS - 1].contains(&format!("`bad{}`", MAX_WARNINGS - 1)));
    assert!(warnings[MAX_WARNINGS].ends_with("count=2"), "{warnings:#?}");
}

/// The names of the tools listed from `pages`, how many requests were sent, and the
/// cursor of each.
async fn followed(pages: Vec<String>) -> (Vec<String>, usize, Vec<Option<String>>) {
    let (client, mut received) = scripted_server(pages).await;
    let sent = AtomicUsize::new(0);
    let tools = list_tools(
        client.peer(),
        &Cancellations::new(client.peer().clone()),
        "s",
        bounds(Duration::from_secs(30)),
        &sent,
    )
    .await
    .unwrap()
    .tools;
    let names = tools.iter().map(|listed| listed.tool.name.to_string());
    let mut cursors = Vec::new();
    while let Ok(Received::List { cursor, .. }) = received.try_recv() {
        cursors.push(cursor);
    }
    (names.collect(), sent.load(Ordering::Relaxed), cursors)
}

#[tokio::test]
async fn pages_are_followed_by_their_cursors() {
    let (names, sent, cursors) = followed(vec![
        page(&good("a"), Some("c1")),
        page(&good("b"), Some("c2")),
        page(&good("c"), None),
    ])
    .await;
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(sent, 3);
    assert_eq!(cursors, [None, Some("c1".into()), Some("c2".into())]);
}

#[tokio::test]
async fn an_empty_cursor_ends_the_listing() {
    let (names, sent, cursors) = followed(vec![
        page(&good("a"), Some("c1")),
        page(&good("b"), Some("")),
        // Never asked for: a server asked with `""` may answer its first page again.
        page(&good("a"), None),
    ])
    .await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(sent, 2);
    assert_eq!(cursors, [None, Some("c1".into())]);
}

#[tokio::test]
async fn a_repeated_cursor_ends_the_listing_with_an_error() {
    let pages = vec![
        page(&good("a"), Some("again")),
        page(&good("b"), Some("again")),
    ];
    let error = list(pages).await.unwrap_err();
    assert!(
        matches!(&error, ListToolsError::RepeatedCursor { cursor } if cursor == "again"),
        "{error:?}"
    );
}

#[tokio::test]
async fn more_pages_than_the_limit_is_an_error() {
    let pages = (0..=MAX_LIST_PAGES)
        .map(|n| page(&good(&format!("t{n}")), Some(&format!("c{n}"))))
        .collect();
    let error = list(pages).await.unwrap_err();
    assert!(
        matches!(
            error,
            ListToolsError::TooManyPages {
                limit: MAX_LIST_PAGES
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn more_tools_than_the_limit_is_an_error_naming_the_setting() {
    let tools: Vec<String> = (0..=crate::config::DEFAULT_MAX_TOOLS)
        .map(|n| good(&format!("t{n}")))
        .collect();
    let error = list(vec![page(&tools.join(","), None)]).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the server listed more than 10000 tools (raise `max_tools`)"
    );
}

#[tokio::test]
async fn max_tools_sets_the_limit_across_pages() {
    let listed = |max_tools| async move {
        let (client, _received) = scripted_server(vec![
            page(&[good("a"), good("b")].join(","), Some("c1")),
            page(&good("c"), None),
        ])
        .await;
        let bounds = Bounds {
            page_timeout: Duration::from_secs(30),
            max_tools,
        };
        let cancellations = Cancellations::new(client.peer().clone());
        list_tools(
            client.peer(),
            &cancellations,
            "s",
            bounds,
            &AtomicUsize::new(0),
        )
        .await
    };
    assert_eq!(listed(3).await.unwrap().tools.len(), 3);
    let error = listed(2).await.unwrap_err();
    assert!(
        matches!(error, ListToolsError::TooManyTools { limit: 2 }),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_page_without_an_answer_times_out_and_is_cancelled() {
    let (client, mut received) = scripted_server(vec![page(&good("a"), Some("c1"))]).await;
    let sent = AtomicUsize::new(0);
    let error = list_tools(
        client.peer(),
        &Cancellations::new(client.peer().clone()),
        "s",
        bounds(Duration::from_secs(7)),
        &sent,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, ListToolsError::Timeout { after } if after == Duration::from_secs(7)),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "no answer to `tools/list` within 7s (raise `startup_timeout_sec`)"
    );
    let Some(Received::List { .. }) = received.recv().await else {
        panic!("the first page was asked for");
    };
    let Some(Received::List { id, .. }) = received.recv().await else {
        panic!("the second page was asked for");
    };
    assert_eq!(received.recv().await, Some(Received::Cancelled { id }));
}

#[tokio::test]
async fn a_dropped_listing_cancels_its_page() {
    let (client, mut received) = scripted_server(Vec::new()).await;
    let sent = AtomicUsize::new(0);
    let cancellations = Cancellations::new(client.peer().clone());
    let id = tokio::select! {
        result = list_tools(client.peer(), &cancellations, "s", bounds(Duration::from_secs(30)), &sent) => {
            panic!("the listing cannot finish: {result:?}")
        }
        Some(Received::List { id, .. }) = received.recv() => id,
    };
    assert_eq!(received.recv().await, Some(Received::Cancelled { id }));
}

mod properties {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;

    use super::*;
    use crate::{catalog::Catalog, naming::MAX_TOOL_NAME_LEN};

    /// Strings matching `pattern`; compiled once, not at every case as a `&str`
    /// strategy is.
    fn regex(pattern: &str) -> proptest::string::RegexGeneratorStrategy<String> {
        proptest::string::string_regex(pattern).expect("a valid pattern")
    }

    /// Strings of `len` arbitrary characters (control characters, unicode).
    fn chars(len: std::ops::Range<usize>) -> impl Strategy<Value = String> + Clone {
        prop::collection::vec(any::<char>(), len).prop_map(String::from_iter)
    }

    /// Any JSON value, a few levels deep.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |n| n.is_finite())
                .prop_map(Value::from),
            chars(0..9).prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(chars(0..7), inner, 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    /// Tool names as servers send them: empty, colliding once sanitized, unicode,
    /// long, or one of a few that repeat.
    fn any_name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            regex("[a._é-]{1,4}"),
            chars(1..21),
            regex("[a-z]{60,90}"),
            prop::sample::select(vec!["same", "a.b", "a_b", "x__y"]).prop_map(str::to_owned),
        ]
    }

    /// A listed entry: mostly tool-shaped (with a name that may be of the wrong
    /// kind, an input schema that may not be an object, optional fields that may
    /// be malformed), sometimes any JSON at all.
    fn any_entry() -> impl Strategy<Value = Value> {
        let schema = prop_oneof![
            3 => Just(Value::Object(Map::new())),
            1 => any_json(),
        ];
        let name = prop_oneof![
            4 => any_name().prop_map(Value::from),
            1 => any_json(),
        ];
        let extra = prop::collection::btree_map(
            prop::sample::select(vec![
                "description",
                "title",
                "annotations",
                "_meta",
                "icons",
            ]),
            any_json(),
            0..2,
        );
        let tool_shaped =
            (name, schema, extra, any::<bool>()).prop_map(|(name, schema, extra, with_schema)| {
                let mut fields = Map::new();
                fields.insert("name".into(), name);
                if with_schema {
                    fields.insert("inputSchema".into(), schema);
                }
                for (key, value) in extra {
                    fields.insert(key.into(), value);
                }
                Value::Object(fields)
            });
        prop_oneof![8 => tool_shaped, 1 => any_json()]
    }

    fn any_servers() -> impl Strategy<Value = BTreeMap<String, Vec<Value>>> {
        let server = prop_oneof![regex("[a._-]{1,4}"), chars(1..13), regex("[a-z]{50,70}")];
        prop::collection::btree_map(server, prop::collection::vec(any_entry(), 0..24), 1..5)
    }

    proptest! {
        // XorShift: ChaCha, the default, takes most of the time of an unoptimized test.
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_listing_gives_unique_routable_names_of_at_most_64_characters(
            servers in any_servers()
        ) {
            let mut kept: BTreeMap<&str, Vec<ListedTool>> = BTreeMap::new();
            for (server, entries) in &servers {
                let mut listed = ListedTools::default();
                let mut first_usable: HashMap<String, ListedTool> = HashMap::new();
                for entry in entries {
                    if let Ok(usable) = usable_tool(entry) {
                        first_usable.entry(usable.tool.name.to_string()).or_insert(usable);
                    }
                    // As the server wrote it: read from its text.
                    let text = entry.to_string();
                    let _ = listed.push(Entry::Raw(serde_json::from_str(&text).unwrap()), None);
                }
                let tools = listed.into_tools();
                // Every name once, and under it the first usable entry listed.
                prop_assert_eq!(tools.len(), first_usable.len());
                for listed in &tools {
                    prop_assert!(!listed.tool.name.is_empty());
                    prop_assert_eq!(Some(listed), first_usable.get(listed.tool.name.as_ref()));
                }
                kept.insert(server, tools);
            }

            let configs: Vec<crate::ServerConfig> = kept
                .keys()
                .map(|server| crate::ServerConfig::stdio(*server, "unused", vec![]))
                .collect();
            let catalog = Catalog::build(
                &Catalog::default(),
                configs.iter().zip(kept.values()).map(|(config, tools)| (config, tools.as_slice())),
            );
            let total: usize = kept.values().map(Vec::len).sum();
            prop_assert_eq!(catalog.tools().len(), total, "no tool is lost");
            let mut names = HashSet::new();
            for qualified in catalog.tools() {
                let name = &qualified.qualified_name;
                prop_assert!(names.insert(name.clone()), "`{}` twice", name);
                prop_assert!(name.len() <= MAX_TOOL_NAME_LEN, "`{}` too long", name);
                prop_assert!(
                    name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "`{}` has a character a model may not accept", name
                );
                let routed = catalog.resolve(name).expect("every listed name resolves");
                prop_assert_eq!(routed, qualified);
            }
            for (server, tools) in &kept {
                for listed in tools {
                    let found = catalog
                        .tools()
                        .filter(|q| *q.server == **server && q.tool == listed.tool)
                        .count();
                    prop_assert_eq!(found, 1, "`{}` of `{}` once", listed.tool.name, server);
                }
            }
        }

        #[test]
        fn any_answer_is_read_as_a_page_or_refused_without_panicking(answer in any_json()) {
            let text = answer.to_string();
            if let Ok(page) = Page::parse(&text) {
                let tools: Vec<Value> = page
                    .tools
                    .iter()
                    .map(|entry| match entry {
                        Entry::Raw(raw) => serde_json::from_str(raw.get()).unwrap(),
                        Entry::Parsed(value) => value.clone(),
                    })
                    .collect();
                prop_assert_eq!(Some(&Value::Array(tools)), answer.get("tools"));
                let mut listed = ListedTools::default();
                for entry in page.tools {
                    let _ = listed.push(entry, None);
                }
            }
        }
    }
}

#[test]
fn a_quoted_cursor_is_escaped_and_cut() {
    let cursor = format!("a\nb{}", "x".repeat(1000));
    let quoted = shown(&cursor);
    assert!(quoted.starts_with("a\\nb"), "{quoted}");
    assert!(quoted.ends_with('…'), "{quoted}");
    assert!(quoted.chars().count() <= LABEL_CHARS + 2, "{quoted}");
}

#[tokio::test]
async fn the_caching_hints_of_every_page_make_the_grant() {
    use crate::shared_listing::{Grant, Scope};
    let hinted = |tool: &str, cursor: Option<&str>, hints: &str| {
        let next = cursor.map_or(String::new(), |c| format!(r#","nextCursor":"{c}""#));
        format!(r#"{{"tools":[{}]{next}{hints}}}"#, good(tool))
    };
    let listing = list_with_hints(vec![
        hinted("a", Some("c1"), r#","ttlMs":60000,"cacheScope":"public""#),
        hinted("b", None, r#","ttlMs":30000,"cacheScope":"public""#),
    ])
    .await
    .unwrap();
    assert_eq!(
        names(listing.tools.iter().map(|listed| &*listed.tool)),
        ["a", "b"]
    );
    assert_eq!(
        listing.grant,
        Some(Grant {
            ttl: Duration::from_secs(30),
            scope: Scope::Public
        })
    );
    for hints in [
        r#","ttlMs":-5,"cacheScope":"public""#,
        r#","ttlMs":"60000","cacheScope":"public""#,
        r#","ttlMs":1.5,"cacheScope":"public""#,
        r#","cacheScope":"public""#,
    ] {
        let listing = list_with_hints(vec![hinted("a", None, hints)])
            .await
            .unwrap();
        assert_eq!(listing.grant, None, "{hints}");
        assert_eq!(
            names(listing.tools.iter().map(|listed| &*listed.tool)),
            ["a"],
            "a malformed hint costs nothing else"
        );
    }
    let listing = list_with_hints(vec![hinted(
        "a",
        None,
        r#","ttlMs":5,"cacheScope":"everyone""#,
    )])
    .await
    .unwrap();
    assert_eq!(listing.grant.map(|grant| grant.scope), Some(Scope::Private));
}

#[test]
fn a_tool_rmcps_transport_refused_for_its_headers_is_left_out() {
    let text = json!({"tools": [
        {"name": "a", "inputSchema": {}},
        {"name": "b", "inputSchema": {"properties": {"x": {"x-mcp-header": ""}}}}
    ]})
    .to_string();
    let kept: HashSet<String> = ["a".to_owned()].into();
    let read = read_page(
        &text,
        ListedTools::default(),
        Some(&kept),
        crate::config::DEFAULT_MAX_TOOLS,
    )
    .unwrap();
    let names: Vec<&str> = read
        .listed
        .tools
        .iter()
        .map(|tool| tool.tool.name.as_ref())
        .collect();
    assert_eq!(names, ["a"]);
    assert_eq!(read.left_out[0].label, Label::Name("b".to_owned()));
    assert_eq!(read.left_out[0].reason, Reason::HeadersRefused);
    let all = read_page(
        &text,
        ListedTools::default(),
        None,
        crate::config::DEFAULT_MAX_TOOLS,
    )
    .unwrap();
    assert_eq!(all.listed.tools.len(), 2, "read from the text alone: all");
}
