//! A reply that timeoutMS left unread: the connection is not closed. Its late reply is read
//! off the stream and discarded in the background, and the connection goes back to the pool,
//! so a timeout does not cost a new connection (the churn CSOT's maxTimeMS exists to avoid).

use blackpipe::scripted::Matcher;
use bson::{Document, doc};

use crate::crud_wire::cursor_reply;
use crate::pool::{PATIENCE, cmap};
use crate::retry_support::harness;

#[tokio::test]
async fn a_late_reply_is_read_off_and_the_connection_reused() {
    let server = crate::server().await;
    let h = harness(
        &crate::uri(&server, "directConnection=true"),
        "&timeoutMS=300&maxPoolSize=1",
    )
    .await;
    let items = h.client.database("db").collection::<Document>("items");

    // The server holds the first find until the client has given up on it.
    let first = tokio::spawn({
        let items = items.clone();
        async move { items.find_one(doc! {}).await }
    });
    let held = tokio::time::timeout(PATIENCE, server.next_request(Matcher::command("find")))
        .await
        .expect("the find arrives")
        .expect("the find arrives");
    let error = first.await.unwrap().expect_err("the find times out");
    assert!(error.is_timeout(), "{error:?}");

    // Its reply comes late; the next find must get its own reply, not that one.
    held.reply(cursor_reply("firstBatch", 0..1, 0)).unwrap();
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 5..6, 0),
        )
        .always();
    let found = tokio::time::timeout(PATIENCE, items.find_one(doc! {}))
        .await
        .expect("the second find ends")
        .expect("the second find succeeds");
    assert_eq!(found, Some(doc! { "i": 5 }));

    let events = cmap(&h.events);
    let created = events
        .iter()
        .filter(|e| e.name() == "ConnectionCreated")
        .count();
    let closed = events
        .iter()
        .filter(|e| e.name() == "ConnectionClosed")
        .count();
    assert_eq!(
        (created, closed),
        (1, 0),
        "one connection served both finds: {:?}",
        events.iter().map(|e| e.name()).collect::<Vec<_>>()
    );
}
