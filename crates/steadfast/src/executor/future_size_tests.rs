//! The operation future's size does not grow with the operation's: the executor boxes the
//! operation before making its future, so the nested stage futures hold a pointer to it
//! instead of a copy at every level (each call copies its whole future once, into a box).

use bson::RawDocumentBuf;

use super::ExecutionContext;
use crate::Client;
use crate::conn::description::StreamDescription;
use crate::error::Result;
use crate::operation::{Command, Operation, ReplyContext, Retryability};

/// An operation carrying `N` bytes of its own (as options structs do).
struct Padded<const N: usize>([u8; N]);

impl<const N: usize> Operation for Padded<N> {
    type Output = ();

    fn name(&self) -> &str {
        "ping"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new("ping", "admin", bson::doc! { "ping": 1 }))
    }

    fn handle_reply(&mut self, _reply: RawDocumentBuf, _context: &ReplyContext<'_>) -> Result<()> {
        Ok(())
    }

    fn retryability(&self) -> Retryability {
        Retryability::None
    }
}

#[tokio::test]
async fn the_operation_future_does_not_grow_with_the_operation() {
    // Nothing listens there and nothing is awaited: the futures are only made.
    let client = Client::with_uri_str("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=1")
        .await
        .expect("client");
    let executor = client.executor();
    let small = executor.execute(Padded([0_u8; 8]), ExecutionContext::default());
    let large = executor.execute(Padded([0_u8; 8192]), ExecutionContext::default());
    assert_eq!(
        std::mem::size_of_val(&small),
        std::mem::size_of_val(&large),
        "an operation's bytes are stored in its future"
    );
    drop((small, large));
    client.shutdown().await;
}
