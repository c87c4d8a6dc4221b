//! Cursors, sessions and inherited settings of the CRUD API against blackpipe's scripted
//! server: getMores follow the cursor, abandoned cursors are killed, sessions are used and
//! returned, and concerns resolve operation > collection > database > client.

use blackpipe::scripted::Matcher;
use bson::{Bson, Document, doc};
use futures_util::{StreamExt, TryStreamExt};

use crate::crud_wire::{acknowledge_writes, client_for, cursor_reply, script_cursor};
use crate::{client, server};

#[tokio::test]
async fn a_cursor_dropped_early_is_killed_on_its_server() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..2, 42),
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = items.find(doc! {}).batch_size(2).await.unwrap();
    assert_eq!(cursor.next().await.unwrap().unwrap(), doc! { "i": 0 });
    drop(cursor);
    let kill = server
        .next_request(Matcher::command("killCursors"))
        .await
        .unwrap();
    assert_eq!(kill.database(), "db");
    assert_eq!(kill.command().get_str("killCursors").ok(), Some("items"));
    assert_eq!(
        kill.command().get_array("cursors").unwrap(),
        &vec![Bson::Int64(42)]
    );
    kill.reply(doc! { "cursorsKilled": [42_i64], "ok": 1 })
        .unwrap();
}

#[tokio::test]
async fn get_mores_follow_the_cursor_and_an_exhausted_cursor_is_not_killed() {
    let server = server().await;
    script_cursor(&server, &[(0..2, 7), (2..4, 7), (4..5, 0)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let all: Vec<Document> = items
        .find(doc! {})
        .batch_size(2)
        .comment("trace")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 5);
    let get_mores = server.requests_matching(&Matcher::command("getMore"));
    assert_eq!(get_mores.len(), 2);
    for get_more in &get_mores {
        assert_eq!(get_more.command().get_i64("getMore").ok(), Some(7));
        assert_eq!(get_more.command().get_str("collection").ok(), Some("items"));
        assert_eq!(get_more.command().get_i64("batchSize").ok(), Some(2));
        assert_eq!(get_more.command().get_str("comment").ok(), Some("trace"));
    }
    // A ping round trip orders the check after anything the cursor might have sent.
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert!(
        server
            .requests_matching(&Matcher::command("killCursors"))
            .is_empty()
    );
}

#[tokio::test]
async fn find_one_asks_for_a_single_document_in_a_single_batch() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 0),
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let found = items
        .find_one(doc! { "i": 0 })
        .sort(doc! { "i": 1 })
        .await
        .unwrap();
    assert_eq!(found, Some(doc! { "i": 0 }));
    let find = &server.requests_matching(&Matcher::command("find"))[0];
    let command = find.command();
    assert_eq!(command.get_i64("limit").ok(), Some(1));
    assert_eq!(command.get_bool("singleBatch").ok(), Some(true));
    assert!(command.get("batchSize").is_none());
    assert_eq!(command.get_document("filter").ok(), Some(&doc! { "i": 0 }));
}

#[tokio::test]
async fn an_explicit_session_is_used_by_writes_reads_and_get_mores() {
    let server = server().await;
    acknowledge_writes(&server);
    script_cursor(&server, &[(0..1, 9), (1..2, 9)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = client.start_session().await.unwrap();
    items
        .insert_one(doc! { "a": 1 })
        .session(&mut session)
        .await
        .unwrap();
    let mut cursor = items
        .find(doc! {})
        .batch_size(1)
        .session(&mut session)
        .await
        .unwrap();
    assert_eq!(
        cursor.next(&mut session).await.unwrap().unwrap(),
        doc! { "i": 0 }
    );
    assert_eq!(
        cursor.next(&mut session).await.unwrap().unwrap(),
        doc! { "i": 1 }
    );
    drop(cursor);
    let kill = server
        .next_request(Matcher::command("killCursors"))
        .await
        .unwrap();
    kill.reply(doc! { "ok": 1 }).unwrap();

    let lsid = session.id().clone();
    for name in ["insert", "find", "getMore"] {
        let requests = server.requests_matching(&Matcher::command(name));
        assert_eq!(requests.len(), 1, "{name}");
        assert_eq!(
            requests[0].command().get_document("lsid").ok(),
            Some(&lsid),
            "{name} runs in the session"
        );
    }
}

#[tokio::test]
async fn a_cursor_dropped_during_a_get_more_is_still_killed() {
    let server = server().await;
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 77),
        )
        .once();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = items.find(doc! {}).await.unwrap();
    let reader = tokio::spawn(async move { while cursor.advance().await.unwrap() {} });
    // The getMore reaches the server and is left unanswered; the reader is then dropped.
    let get_more = server
        .next_request(Matcher::command("getMore"))
        .await
        .unwrap();
    reader.abort();
    assert!(reader.await.unwrap_err().is_cancelled());
    let kill = server
        .next_request(Matcher::command("killCursors"))
        .await
        .unwrap();
    assert_eq!(
        kill.command().get_array("cursors").unwrap(),
        &vec![Bson::Int64(77)]
    );
    kill.reply(doc! { "ok": 1 }).unwrap();
    drop(get_more);
}

fn write_concern(w: steadfast::options::Acknowledgment) -> steadfast::options::WriteConcern {
    let mut concern = steadfast::options::WriteConcern::default();
    concern.w = Some(w);
    concern
}

fn read_concern(level: &str) -> steadfast::options::ReadConcern {
    steadfast::options::ReadConcern::new(steadfast::options::ReadConcernLevel::parse(level))
}

#[tokio::test]
async fn concerns_are_inherited_client_database_collection_operation() {
    use steadfast::options::{Acknowledgment, CollectionOptions, DatabaseOptions};
    let server = server().await;
    acknowledge_writes(&server);
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..0, 0),
        )
        .always();
    let client = client(&server, "w=majority&readConcernLevel=majority").await;
    let plain = client.database("db").collection::<Document>("c");
    let db = client.database_with_options(
        "db",
        DatabaseOptions::default()
            .write_concern(write_concern(Acknowledgment::Nodes(2)))
            .read_concern(read_concern("local")),
    );
    let inherits_db = db.collection::<Document>("c");
    let own = db.collection_with_options::<Document>(
        "c",
        CollectionOptions::default()
            .write_concern(write_concern(Acknowledgment::Nodes(3)))
            .read_concern(read_concern("available")),
    );

    plain.insert_one(doc! {}).await.unwrap();
    inherits_db.insert_one(doc! {}).await.unwrap();
    own.insert_one(doc! {}).await.unwrap();
    own.insert_one(doc! {})
        .write_concern(write_concern(Acknowledgment::Nodes(1)))
        .await
        .unwrap();
    let sent: Vec<Document> = server
        .requests_matching(&Matcher::command("insert"))
        .iter()
        .map(|r| r.command().get_document("writeConcern").unwrap().clone())
        .collect();
    assert_eq!(
        sent,
        [
            doc! { "w": "majority" },
            doc! { "w": 2_i64 },
            doc! { "w": 3_i64 },
            doc! { "w": 1_i64 }
        ]
    );

    plain.find_one(doc! {}).await.unwrap();
    inherits_db.find_one(doc! {}).await.unwrap();
    own.find_one(doc! {}).await.unwrap();
    own.find_one(doc! {})
        .read_concern(read_concern("linearizable"))
        .await
        .unwrap();
    let levels: Vec<String> = server
        .requests_matching(&Matcher::command("find"))
        .iter()
        .map(|r| {
            r.command()
                .get_document("readConcern")
                .unwrap()
                .get_str("level")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(levels, ["majority", "local", "available", "linearizable"]);
}

#[tokio::test]
async fn a_cursor_keeps_its_implicit_session_until_exhausted() {
    let server = server().await;
    acknowledge_writes(&server);
    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..1, 5),
        )
        .always();
    server
        .rule(
            Matcher::command("getMore"),
            cursor_reply("nextBatch", 1..2, 0),
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let lsid_of = |name: &str, nth: usize| {
        server.requests_matching(&Matcher::command(name))[nth]
            .command()
            .get_document("lsid")
            .unwrap()
            .clone()
    };

    let mut cursor = items.find(doc! {}).await.unwrap();
    assert!(cursor.advance().await.unwrap());
    // While the cursor is open its session is taken: another operation gets another one.
    items.insert_one(doc! {}).await.unwrap();
    assert_ne!(lsid_of("insert", 0), lsid_of("find", 0));
    assert!(cursor.advance().await.unwrap());
    assert_eq!(
        lsid_of("getMore", 0),
        lsid_of("find", 0),
        "getMore in the cursor's session"
    );
    assert!(!cursor.advance().await.unwrap());
    // Exhausted: the session went back to the pool, and the most recently returned session is
    // the next one handed out.
    items.insert_one(doc! {}).await.unwrap();
    assert_eq!(lsid_of("insert", 1), lsid_of("find", 0));
}

#[tokio::test]
async fn has_next_looks_ahead_without_fetching_or_moving() {
    let server = server().await;
    script_cursor(&server, &[(0..2, 7), (2..3, 0)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = items.find(doc! {}).batch_size(2).await.unwrap();
    assert!(cursor.has_next(), "a buffered first batch");
    assert!(cursor.has_next(), "asking again changes nothing");
    assert!(cursor.current().is_none(), "has_next does not move");
    assert_eq!(cursor.next().await.unwrap().unwrap(), doc! { "i": 0 });
    assert_eq!(cursor.next().await.unwrap().unwrap(), doc! { "i": 1 });
    assert!(cursor.has_next(), "the server cursor is still open");
    assert!(
        server
            .requests_matching(&Matcher::command("getMore"))
            .is_empty(),
        "has_next sends nothing"
    );
    assert_eq!(cursor.next().await.unwrap().unwrap(), doc! { "i": 2 });
    assert!(!cursor.has_next(), "the server closed the cursor");
    assert!(cursor.next().await.is_none());

    server
        .rule(
            Matcher::command("find"),
            cursor_reply("firstBatch", 0..0, 0),
        )
        .once();
    let empty = items.find(doc! {}).await.unwrap();
    assert!(!empty.has_next());
}

#[tokio::test]
async fn a_session_cursor_stream_stops_and_resumes_where_the_cursor_is() {
    let server = server().await;
    script_cursor(&server, &[(0..2, 9), (2..4, 9), (4..5, 0)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = client.start_session().await.unwrap();
    let mut cursor = items
        .find(doc! {})
        .batch_size(2)
        .session(&mut session)
        .await
        .unwrap();
    let stream: steadfast::SessionCursorStream<'_, '_, Document> = cursor.stream(&mut session);
    let first: Vec<Document> = stream.take(3).try_collect().await.unwrap();
    assert_eq!(
        first,
        vec![doc! { "i": 0 }, doc! { "i": 1 }, doc! { "i": 2 }]
    );
    // The stream is gone: the session is free again, and the cursor carries on.
    assert_eq!(
        cursor.next(&mut session).await.unwrap().unwrap(),
        doc! { "i": 3 }
    );
    let rest: Vec<Document> = cursor.stream(&mut session).try_collect().await.unwrap();
    assert_eq!(rest, vec![doc! { "i": 4 }]);
    assert!(cursor.next(&mut session).await.is_none());
    let get_mores = server.requests_matching(&Matcher::command("getMore"));
    assert_eq!(get_mores.len(), 2);
    for get_more in &get_mores {
        assert_eq!(
            get_more.command().get_document("lsid").ok(),
            Some(session.id())
        );
    }
}
