//! The scripted server's shared state and the [`Handler`] that routes each request to a rule,
//! a default responder, or the test.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bson::Document;
use tokio::sync::{oneshot, watch};

use super::defaults::{self, DefaultKind, DefaultResponders};
use super::matcher::Matcher;
use super::pending::PendingRequest;
use super::record::{HandledBy, RecordedRequest};
use super::rules::Rule;
use crate::server::{
    BoxFuture, ConnectionContext, ConnectionInfo, Handler, Outcome, Reaction, Request,
};

/// Everything a scripted server and its connection tasks share.
pub(crate) struct Script {
    state: Mutex<State>,
    /// Number of recorded requests, so tests can await arrivals.
    recorded: watch::Sender<usize>,
}

pub(crate) struct State {
    pub(crate) rules: Vec<Arc<Rule>>,
    pub(crate) defaults: DefaultResponders,
    pub(crate) hello: Document,
    pub(crate) receive_timeout: Duration,
    pub(crate) records: Vec<RecordedRequest>,
    waiters: Vec<Waiter>,
    queue: VecDeque<PendingRequest>,
    next_waiter_id: u64,
}

/// A test waiting in `next_request`.
struct Waiter {
    id: u64,
    matcher: Matcher,
    sender: oneshot::Sender<PendingRequest>,
}

/// Where a request goes, decided on arrival.
enum Route {
    Rule(Arc<Rule>),
    Default(DefaultKind, Document),
    Test(oneshot::Receiver<Outcome>),
}

/// What `next_request` gets immediately: a queued request, or a place in line.
pub(crate) enum Claim {
    Ready(PendingRequest),
    Waiting(u64, oneshot::Receiver<PendingRequest>),
}

impl Script {
    pub(crate) fn new(
        hello: Document,
        defaults: DefaultResponders,
        receive_timeout: Duration,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                rules: Vec::new(),
                defaults,
                hello,
                receive_timeout,
                records: Vec::new(),
                waiters: Vec::new(),
                queue: VecDeque::new(),
                next_waiter_id: 0,
            }),
            recorded: watch::Sender::new(0),
        }
    }

    /// The state, even if a panicking test thread poisoned the lock (the data stays usable).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add_rule(&self, rule: Arc<Rule>) {
        self.lock().rules.push(rule);
    }

    pub(crate) fn subscribe_records(&self) -> watch::Receiver<usize> {
        self.recorded.subscribe()
    }

    /// Takes the oldest queued request matching `matcher`, or registers a waiter for the next.
    pub(crate) fn claim(&self, matcher: &Matcher) -> Claim {
        let mut state = self.lock();
        state.queue.retain(PendingRequest::is_connection_open);
        let found = state
            .queue
            .iter()
            .position(|pending| matcher.matches(pending.request(), pending.connection()));
        if let Some(pending) = found.and_then(|index| state.queue.remove(index)) {
            return Claim::Ready(pending);
        }
        let (sender, receiver) = oneshot::channel();
        state.next_waiter_id += 1;
        let id = state.next_waiter_id;
        state.waiters.push(Waiter {
            id,
            matcher: matcher.clone(),
            sender,
        });
        Claim::Waiting(id, receiver)
    }

    /// Withdraws a waiter that gave up.
    pub(crate) fn withdraw(&self, waiter_id: u64) {
        self.lock().waiters.retain(|waiter| waiter.id != waiter_id);
    }

    /// Takes a queued request matching `matcher` without waiting.
    pub(crate) fn try_claim(&self, matcher: &Matcher) -> Option<PendingRequest> {
        let mut state = self.lock();
        state.queue.retain(PendingRequest::is_connection_open);
        let index = state
            .queue
            .iter()
            .position(|pending| matcher.matches(pending.request(), pending.connection()))?;
        state.queue.remove(index)
    }

    /// Summaries of the requests waiting in the queue for the test.
    pub(crate) fn unclaimed(&self) -> Vec<String> {
        let mut state = self.lock();
        state.queue.retain(PendingRequest::is_connection_open);
        state
            .queue
            .iter()
            .map(|pending| {
                super::record::summarize(
                    pending.sequence(),
                    pending.request(),
                    pending.connection(),
                )
            })
            .collect()
    }

    /// Records `request` and decides who answers it: the first live rule that matches, else a
    /// default responder, else the test (a waiting `next_request`, or the queue).
    fn route(&self, request: &Arc<Request>, connection: &ConnectionInfo) -> Route {
        let mut state = self.lock();
        let sequence = state.records.len() as u64 + 1;
        let mut chosen_rule = None;
        for rule in &state.rules {
            if rule.matcher.matches(request, connection) && rule.try_take() {
                chosen_rule = Some(Arc::clone(rule));
                break;
            }
        }
        state.rules.retain(|rule| rule.is_live());
        let default = if chosen_rule.is_none() {
            state.defaults.kind_for(request)
        } else {
            None
        };
        let handled_by = match (&chosen_rule, default) {
            (Some(_), _) => HandledBy::Rule,
            (None, Some(_)) => HandledBy::DefaultResponder,
            (None, None) => HandledBy::Test,
        };
        // Recorded before a waiter can see it, so the record is never behind the test.
        state.records.push(RecordedRequest::new(
            sequence,
            connection.clone(),
            Arc::clone(request),
            handled_by,
        ));
        let record_count = state.records.len();
        let route = match (chosen_rule, default) {
            (Some(rule), _) => Route::Rule(rule),
            (None, Some(kind)) => Route::Default(kind, state.hello.clone()),
            (None, None) => {
                let (sender, receiver) = oneshot::channel();
                let pending =
                    PendingRequest::new(sequence, connection.clone(), Arc::clone(request), sender);
                state.deliver(pending);
                Route::Test(receiver)
            }
        };
        drop(state);
        self.recorded.send_replace(record_count);
        route
    }
}

impl State {
    /// Hands a request to the first live waiter that matches, else queues it.
    fn deliver(&mut self, mut pending: PendingRequest) {
        self.waiters.retain(|waiter| !waiter.sender.is_closed());
        while let Some(index) = self.waiters.iter().position(|waiter| {
            waiter
                .matcher
                .matches(pending.request(), pending.connection())
        }) {
            let waiter = self.waiters.remove(index);
            match waiter.sender.send(pending) {
                Ok(()) => return,
                // The waiter gave up in the meantime: try the next one.
                Err(returned) => pending = returned,
            }
        }
        self.queue.retain(PendingRequest::is_connection_open);
        self.queue.push_back(pending);
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Script")
            .field("rules", &state.rules.len())
            .field("records", &state.records.len())
            .field("queued", &state.queue.len())
            .field("waiters", &state.waiters.len())
            .finish()
    }
}

/// The [`Handler`] a scripted server runs on every connection.
pub(crate) struct ScriptHandler {
    pub(crate) script: Arc<Script>,
}

impl Handler for ScriptHandler {
    fn handle<'a>(
        &'a self,
        request: Arc<Request>,
        connection: &'a mut ConnectionContext,
    ) -> BoxFuture<'a, Outcome> {
        let info = connection.info();
        // Routed now, not when the future is first polled, so arrival order is call order.
        let route = self.script.route(&request, &info);
        Box::pin(async move {
            match route {
                Route::Rule(rule) => rule.responder.respond(&request, &info),
                Route::Default(kind, hello) => {
                    Outcome::React(defaults::respond(kind, &request, &info, &hello))
                }
                Route::Test(answer) => match answer.await {
                    Ok(outcome) => outcome,
                    // The PendingRequest was dropped unanswered (it logged a warning).
                    Err(_) => Outcome::React(Reaction::HangUp),
                },
            }
        })
    }
}
