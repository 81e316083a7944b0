//! The HTTP streams of a build without the `http` feature: a type with no value, so
//! that a connection's `Option<&Streams>` is always `None` and the code reading an HTTP
//! connection's streams compiles unchanged, with every branch that would read them
//! proved unreachable by the compiler.

use rmcp::model::RequestId;
use tokio_util::sync::CancellationToken;

use crate::transport::error::HttpFailure;

/// An HTTP connection's streams: none in this build.
#[derive(Debug)]
pub(crate) enum Streams {}

/// How a request's response stream was lost: never, in this build.
#[derive(Debug, Clone)]
pub(crate) struct Lost {
    pub(crate) broke: Option<HttpFailure>,
    never: Streams,
}

impl Lost {
    pub(crate) fn resumable(&self) -> bool {
        match self.never {}
    }
}

impl Clone for Streams {
    fn clone(&self) -> Self {
        match *self {}
    }
}

impl Streams {
    pub(crate) fn ended(&self) -> &CancellationToken {
        match *self {}
    }

    pub(crate) fn cause(&self) -> Option<&HttpFailure> {
        match *self {}
    }

    pub(crate) fn end(&self, _failure: HttpFailure) {
        match *self {}
    }

    pub(crate) fn resumption_failure(&self) -> Option<HttpFailure> {
        match *self {}
    }

    pub(crate) fn take_lost(&self, _id: &RequestId) -> Option<Lost> {
        match *self {}
    }
}
