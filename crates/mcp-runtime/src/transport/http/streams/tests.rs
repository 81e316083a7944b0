use std::collections::HashMap;

use rmcp::transport::streamable_http_client::StreamableHttpClient as _;

use super::*;
use crate::transport::http::{
    SplicingHttpClient,
    tests::{client, ending_without_an_answer},
};

fn refused() -> HttpFailure {
    HttpFailure::Refused {
        server: "web".into(),
    }
}

fn timeout() -> HttpFailure {
    HttpFailure::Timeout {
        server: "web".into(),
    }
}

fn failed<T>(failure: HttpFailure) -> HttpResult<T> {
    Err(StreamableHttpError::Client(failure))
}

#[test]
fn resuming_stops_after_a_bounded_count_of_failures_with_doubling_pauses() {
    let streams = Streams::new("web");
    let policy = Resumption(streams.clone());
    assert_eq!(
        policy.retry(0),
        Some(FIRST_PAUSE),
        "a stream the server ended"
    );
    let mut pauses = Vec::new();
    for failed_so_far in 1.. {
        streams.resumed::<()>(&failed(timeout()));
        match policy.retry(failed_so_far) {
            Some(pause) => pauses.push(pause),
            None => break,
        }
    }
    assert_eq!(pauses, [1, 2].map(Duration::from_secs));
    assert_eq!(pauses.len() + 1, MAX_FAILED_RESUMPTIONS);
    assert!(!streams.ended().is_cancelled(), "a timeout says nothing");
    assert_eq!(policy.retry(40), None);
}

#[test]
fn a_refused_resumption_ends_the_transport_and_every_resumption() {
    let streams = Streams::new("web");
    let policy = Resumption(streams.clone());
    streams.resumed::<()>(&failed(refused()));
    assert_eq!(policy.retry(1), None);
    assert_eq!(policy.retry(0), None, "no stream is resumed any more");
    assert!(streams.ended().is_cancelled());
    assert!(matches!(streams.cause(), Some(HttpFailure::Refused { .. })));
    // The first cause stays.
    streams.requested::<()>(&failed(HttpFailure::Reset {
        server: "web".into(),
    }));
    assert!(matches!(streams.cause(), Some(HttpFailure::Refused { .. })));
}

#[test]
fn a_failure_another_attempt_cannot_mend_stops_resuming_at_once() {
    let streams = Streams::new("web");
    let policy = Resumption(streams.clone());
    streams.resumed::<()>(&failed(HttpFailure::Status {
        server: "web".into(),
        status: 404,
        body_excerpt: String::new(),
    }));
    assert_eq!(policy.retry(1), None);
    assert!(!streams.ended().is_cancelled(), "the server answered");
    assert_eq!(
        policy.retry(0),
        Some(FIRST_PAUSE),
        "another stream the server ended is resumed: none of its attempts failed"
    );
    streams.resumed::<()>(&failed(HttpFailure::Status {
        server: "web".into(),
        status: 503,
        body_excerpt: String::new(),
    }));
    assert_eq!(policy.retry(1), Some(FIRST_PAUSE));
    streams.resumed::<()>(&Ok(()));
    assert_eq!(streams.resumption_failure().map(|f| f.to_string()), None);
}

fn request(id: i64) -> Answering {
    Answering {
        id: RequestId::Number(id),
        raw: None,
    }
}

/// The events `events` passes through the watch of `request`'s stream, resumed
/// after `from` if it was.
fn read(streams: &Arc<Streams>, request: i64, from: Option<&str>, events: Vec<Sse>) -> usize {
    use futures::StreamExt as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let events = futures::stream::iter(events.into_iter().map(Ok));
    let watched = streams.watch(self::request(request), from.map(str::to_owned), events);
    runtime.block_on(watched.count())
}

fn answer(id: i64) -> Sse {
    Sse {
        data: Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)),
        ..Sse::default()
    }
}

fn primed(id: &str) -> Sse {
    Sse {
        id: Some(id.into()),
        ..Sse::default()
    }
}

#[test]
fn a_stream_lost_before_its_answer_is_recorded_until_taken() {
    let streams = Streams::new("web");
    let id = RequestId::Number(7);
    let progress = Sse {
        data: Some(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#.into()),
        ..Sse::default()
    };
    // Answered (another request's answer does not count): nothing recorded.
    assert_eq!(
        read(
            &streams,
            7,
            None,
            vec![progress.clone(), answer(8), answer(7)]
        ),
        3
    );
    assert!(streams.take_lost(&id).is_none());
    // Answered with its id as a string of its digits, which rmcp hands to the
    // request: nothing recorded either.
    let as_digits = Sse {
        data: Some(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#.into()),
        ..Sse::default()
    };
    assert_eq!(read(&streams, 7, None, vec![as_digits]), 1);
    assert!(streams.take_lost(&id).is_none(), "answered");
    // Ended before the answer.
    assert_eq!(read(&streams, 7, None, vec![progress, answer(8)]), 2);
    let lost = streams.take_lost(&id).expect("recorded");
    assert!(lost.broke.is_none(), "the server ended it");
    assert!(!lost.resumable());
    assert!(streams.take_lost(&id).is_none(), "taken once");
}

#[test]
fn a_resumed_stream_is_not_lost_until_it_is_lost_again() {
    let streams = Streams::new("web");
    let id = RequestId::Number(7);
    read(&streams, 7, None, vec![primed("e-1")]);
    assert!(
        streams.resumed_from("e-2").is_none(),
        "no stream was lost there"
    );
    let resumed = streams.resumed_from("e-1").expect("the stream lost there");
    assert_eq!(resumed.id, id);
    assert!(streams.resumed_from("e-1").is_none(), "resumed once");

    // Lost again, after no new event: from the id it was resumed after.
    read(&streams, 7, Some("e-1"), vec![]);
    assert!(streams.resumed_from("e-1").is_some(), "lost again at `e-1`");
    // Lost again after a new event: from that one.
    read(&streams, 7, Some("e-1"), vec![primed("e-2")]);
    let lost = streams.take_lost(&id).expect("lost again");
    assert_eq!(lost.last_event_id.as_deref(), Some("e-2"));
    assert!(streams.take_lost(&id).is_none(), "one record a request");

    // Resumed, then taken: not lost (the deadline passed after the resumption).
    read(&streams, 7, None, vec![primed("e-3")]);
    streams.resumed_from("e-3").unwrap();
    assert!(streams.take_lost(&id).is_none(), "resumed, not lost");
    assert!(streams.resumed_from("e-3").is_none(), "the record is gone");
}

#[test]
fn of_streams_lost_at_the_same_event_id_the_first_lost_is_resumed_first() {
    let streams = Streams::new("web");
    read(&streams, 1, None, vec![primed("same")]);
    read(&streams, 2, None, vec![primed("same")]);
    assert_eq!(
        streams.resumed_from("same").unwrap().id,
        RequestId::Number(1)
    );
    assert_eq!(
        streams.resumed_from("same").unwrap().id,
        RequestId::Number(2)
    );
    assert!(streams.resumed_from("same").is_none());
}

#[test]
fn only_a_get_that_opens_a_sessions_stream_again_resumes_it() {
    let streams = Streams::new("web");
    let (first, second): (Arc<str>, Arc<str>) = ("s-1".into(), "s-2".into());
    assert!(!streams.reopens(None), "no session: no stream of its own");
    assert!(!streams.reopens(Some(&first)), "the first opening");
    assert!(streams.reopens(Some(&first)));
    assert!(!streams.reopens(Some(&second)), "a new session's first");
    assert!(streams.reopens(Some(&second)));
}

#[test]
fn at_most_a_bounded_number_of_lost_streams_is_kept() {
    let streams = Streams::new("web");
    for n in 0..(MAX_LOST as i64 + 10) {
        let lost = Lost {
            broke: None,
            last_event_id: None,
        };
        streams.lose(request(n), lost, false);
    }
    assert_eq!(lock(&streams.state).records.len(), MAX_LOST);
    assert!(streams.take_lost(&RequestId::Number(0)).is_none());
    assert!(
        streams
            .take_lost(&RequestId::Number(MAX_LOST as i64 + 9))
            .is_some()
    );
}

/// Whether a `GET` of `session`'s stream at `uri` (from the event id `from`) failed.
async fn get_fails(
    client: &SplicingHttpClient,
    uri: &str,
    session: &str,
    from: Option<&str>,
) -> bool {
    client
        .get_stream_with_max_sse_event_size(
            uri.into(),
            Some(session.into()),
            from.map(str::to_owned),
            None,
            HashMap::new(),
            1024,
        )
        .await
        .is_err()
}

#[tokio::test]
async fn only_a_get_that_resumes_a_stream_may_find_the_server_gone() {
    for reset in [false, true] {
        let address = ending_without_an_answer(reset).await;
        let uri = format!("http://{address}/mcp");
        let session = client();
        assert!(get_fails(&session, &uri, "s-1", None).await);
        assert!(
            !session.streams.ended().is_cancelled(),
            "the first GET of a session's own stream resumes nothing (reset: {reset})"
        );
        assert!(session.streams.resumption_failure().is_none());
        assert!(
            get_fails(&session, &uri, "s-2", None).await,
            "a new session's"
        );
        assert!(!session.streams.ended().is_cancelled());
        assert!(get_fails(&session, &uri, "s-2", None).await);
        assert!(
            session.streams.ended().is_cancelled(),
            "opening it again resumes it (reset: {reset})"
        );

        let resuming = client();
        assert!(get_fails(&resuming, &uri, "s-1", Some("e-1")).await);
        assert!(
            resuming.streams.ended().is_cancelled(),
            "a GET from an event id resumes a stream (reset: {reset})"
        );
    }
}

#[test]
fn a_stream_lost_again_before_any_event_each_time_it_is_resumed_is_not_resumed_again() {
    let streams = Streams::new("web");
    let id = RequestId::Number(7);
    read(&streams, 7, None, vec![primed("e-1")]);
    for _ in 0..MAX_FRUITLESS_RESUMPTIONS {
        assert_eq!(streams.exhausted("e-1").map(|f| f.to_string()), None);
        streams.resumed_from("e-1").expect("lost there");
        read(&streams, 7, Some("e-1"), vec![]);
    }
    let failure = streams.exhausted("e-1").expect("resumed enough");
    assert!(matches!(failure, HttpFailure::Closed { .. }), "{failure:?}");
    assert_eq!(
        streams.resumption_failure().map(|f| f.to_string()),
        Some(failure.to_string()),
        "kept as the last attempt's"
    );
    assert!(streams.take_lost(&id).is_some(), "still lost");

    // An event on a resumed stream starts the count again.
    read(&streams, 8, None, vec![primed("f-1")]);
    for round in 0..(2 * MAX_FRUITLESS_RESUMPTIONS) {
        streams.resumed_from("f-1").expect("lost there");
        let events = if round % 2 == 0 {
            vec![]
        } else {
            vec![answer(9)]
        };
        read(&streams, 8, Some("f-1"), events);
        assert!(streams.exhausted("f-1").is_none(), "round {round}");
    }
}
