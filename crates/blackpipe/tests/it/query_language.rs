//! The query language as the official `mongodb` driver sees it: regular expressions in filters,
//! `$pull` and the aggregation's `$regex*` operators; the positional `$`, `$[]` and
//! `$[<identifier>]` in updates; positional, `$elemMatch` and `$slice` projections; `$mod`, the
//! bit tests and `$all` with `$elemMatch`. Like `fidelity`, these run unchanged against a real
//! replica set named by `BLACKPIPE_FIDELITY_URI`, and assert mongod 8.0's documented answers.

use bson::{Binary, Bson, Document, Regex, doc, spec::BinarySubtype};
use futures_util::TryStreamExt as _;
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::{ReturnDocument, UpdateOneModel};
use mongodb::{Client, Collection};

use crate::fidelity::{Target, client_options};
use crate::support::within;

async fn collection(target: &Target, prefix: &str) -> (Client, Collection<Document>) {
    let options = client_options(&target.uri, "query-language").await;
    let client = Client::with_options(options).expect("client options are valid");
    // A collection no other test uses (tests may share an external mongod).
    let name = format!("{prefix}_{}", bson::oid::ObjectId::new().to_hex());
    let collection = client.database("query_language").collection(&name);
    (client, collection)
}

fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_owned().try_into().expect("no NUL"),
        options: options.to_owned().try_into().expect("no NUL"),
    })
}

async fn ids(collection: &Collection<Document>, filter: Document) -> Vec<i32> {
    let cursor = within(collection.find(filter).sort(doc! { "_id": 1 }))
        .await
        .unwrap();
    let found: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    found
        .iter()
        .map(|document| document.get_i32("_id").unwrap())
        .collect()
}

/// The code of a command error (a failed find or aggregate).
fn command_code(error: &Error) -> i32 {
    match &*error.kind {
        ErrorKind::Command(command) => command.code,
        _ => panic!("a command error, got {error}"),
    }
}

/// The code and message of one statement's write error (a failed update).
fn write_error(error: &Error) -> (i32, String) {
    match &*error.kind {
        ErrorKind::Write(WriteFailure::WriteError(write)) => (write.code, write.message.clone()),
        _ => panic!("a write error, got {error}"),
    }
}

async fn find_error(collection: &Collection<Document>, filter: Document) -> i32 {
    let error = within(async { collection.find(filter).await?.try_collect::<Vec<_>>().await })
        .await
        .unwrap_err();
    command_code(&error)
}

#[tokio::test]
async fn regular_expressions_filter_strings_arrays_and_stored_regexes() {
    let target = Target::replica_set().await;
    let (_client, people) = collection(&target, "regex").await;
    within(people.insert_many(vec![
        doc! { "_id": 1, "name": "Ann", "tags": ["red", "blue"] },
        doc! { "_id": 2, "name": "anna", "tags": ["green"] },
        doc! { "_id": 3, "name": "Bob\nAnnex", "tags": [] },
        doc! { "_id": 4, "name": re("^ann", "i") },
    ]))
    .await
    .unwrap();
    // A regex also matches a stored regex with the same pattern and options.
    assert_eq!(
        ids(&people, doc! { "name": re("^ann", "i") }).await,
        vec![1, 2, 4]
    );
    assert_eq!(
        ids(
            &people,
            doc! { "name": { "$regex": "^ann", "$options": "im" } }
        )
        .await,
        vec![1, 2, 3]
    );
    assert_eq!(
        ids(&people, doc! { "name": { "$regex": re("^A", "") } }).await,
        vec![1]
    );
    assert_eq!(
        ids(&people, doc! { "name": { "$in": [re("^b", "i"), "anna"] } }).await,
        vec![2, 3]
    );
    assert_eq!(
        ids(&people, doc! { "name": { "$nin": [re("n", "")] } }).await,
        vec![4]
    );
    // `$not` of a regex also keeps a stored regex that is not the same one.
    assert_eq!(
        ids(&people, doc! { "name": { "$not": re("^a", "i") } }).await,
        vec![3, 4]
    );
    assert_eq!(ids(&people, doc! { "tags": re("^gr", "") }).await, vec![2]);
    assert_eq!(
        ids(
            &people,
            doc! { "tags": { "$all": [re("e", ""), re("^b", "")] } }
        )
        .await,
        vec![1]
    );
    let count = within(people.count_documents(doc! { "name": { "$regex": "nn" } }))
        .await
        .unwrap();
    assert_eq!(count, 3);
    // mongod's answers for patterns and options it refuses.
    assert_eq!(
        find_error(&people, doc! { "name": { "$regex": "[)" } }).await,
        51091
    );
    assert_eq!(
        find_error(&people, doc! { "name": { "$regex": "a(?=b)" } }).await,
        51091
    );
    assert_eq!(
        find_error(&people, doc! { "name": { "$regex": "a", "$options": "g" } }).await,
        51108
    );
    assert_eq!(
        find_error(
            &people,
            doc! { "name": { "$regex": re("a", "i"), "$options": "m" } }
        )
        .await,
        2
    );
    assert_eq!(
        find_error(&people, doc! { "name": { "$options": "i" } }).await,
        2
    );
    assert_eq!(
        find_error(&people, doc! { "name": { "$gt": re("a", "") } }).await,
        2
    );
}

#[tokio::test]
async fn regex_expressions_and_pull_use_the_same_engine() {
    let target = Target::replica_set().await;
    let (_client, texts) = collection(&target, "regex_expr").await;
    within(texts.insert_one(
        doc! { "_id": 1, "text": "Hello héllo hello", "tags": ["apple", "Avocado", "kiwi"] },
    ))
    .await
    .unwrap();
    let pipeline = vec![doc! { "$project": {
        "_id": 0,
        "matched": { "$regexMatch": { "input": "$text", "regex": "^hello", "options": "i" } },
        "first": { "$regexFind": { "input": "$text", "regex": re("h(é|e)(l+)o", "") } },
        "all": { "$regexFindAll": { "input": "$text", "regex": "h(x)?(é|e)llo" } },
    } }];
    let cursor = within(texts.aggregate(pipeline)).await.unwrap();
    let projected: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(
        projected,
        vec![doc! {
            "matched": true,
            "first": { "match": "héllo", "idx": 6, "captures": ["é", "ll"] },
            "all": [
                { "match": "héllo", "idx": 6, "captures": [Bson::Null, "é"] },
                { "match": "hello", "idx": 12, "captures": [Bson::Null, "e"] },
            ],
        }]
    );
    let bad =
        vec![doc! { "$project": { "r": { "$regexFind": { "input": "$text", "regex": "[a-" } } } }];
    let error = within(texts.aggregate(bad)).await.unwrap_err();
    assert_eq!(command_code(&error), 51111);
    within(texts.update_one(
        doc! { "_id": 1 },
        doc! { "$pull": { "tags": re("^a", "i") } },
    ))
    .await
    .unwrap();
    let after = within(texts.find_one(doc! { "_id": 1 }))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after.get_array("tags").unwrap(),
        &vec![Bson::String("kiwi".into())]
    );
}

#[tokio::test]
async fn positional_updates_change_the_matched_element() {
    let target = Target::replica_set().await;
    let (client, orders) = collection(&target, "positional").await;
    within(orders.insert_many(vec![
        doc! { "_id": 1, "grades": [80, 85, 90], "items": [{ "sku": "a", "qty": 1 }, { "sku": "b", "qty": 1 }] },
        doc! { "_id": 2, "grades": [85, 100], "items": [] },
    ]))
    .await
    .unwrap();
    within(orders.update_many(doc! { "grades": 85 }, doc! { "$set": { "grades.$": 86 } }))
        .await
        .unwrap();
    within(orders.update_one(
        doc! { "_id": 1, "items.sku": "b" },
        doc! { "$inc": { "items.$.qty": 5 } },
    ))
    .await
    .unwrap();
    within(
        orders
            .update_one(doc! { "_id": 1 }, doc! { "$inc": { "grades.$[high]": 1 } })
            .array_filters(vec![doc! { "high": { "$gte": 86 } }]),
    )
    .await
    .unwrap();
    let updated = within(
        orders
            .find_one_and_update(doc! { "_id": 2 }, doc! { "$mul": { "grades.$[]": 2 } })
            .return_document(ReturnDocument::After),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        updated.get_array("grades").unwrap(),
        &vec![Bson::Int32(172), Bson::Int32(200)]
    );
    let model = UpdateOneModel::builder()
        .namespace(orders.namespace())
        .filter(doc! { "_id": 1 })
        .update(doc! { "$set": { "items.$[i].seen": true } })
        .array_filters(vec![Bson::Document(doc! { "i.qty": { "$gt": 1 } })])
        .build();
    within(client.bulk_write(vec![model])).await.unwrap();
    let first = within(orders.find_one(doc! { "_id": 1 }))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        first,
        doc! { "_id": 1, "grades": [80, 87, 91], "items": [{ "sku": "a", "qty": 1 }, { "sku": "b", "qty": 6, "seen": true }] }
    );
    // mongod's errors for the misuses.
    let error = within(orders.update_one(doc! { "_id": 1 }, doc! { "$set": { "grades.$": 0 } }))
        .await
        .unwrap_err();
    assert_eq!(
        write_error(&error),
        (
            2,
            "The positional operator did not find the match needed from the query.".to_owned()
        )
    );
    let error =
        within(orders.update_one(doc! { "grades": 80 }, doc! { "$set": { "items.$.a.$": 0 } }))
            .await
            .unwrap_err();
    assert_eq!(
        write_error(&error),
        (
            2,
            "Too many positional (i.e. '$') elements found in path 'items.$.a.$'".to_owned()
        )
    );
}

async fn projected(
    collection: &Collection<Document>,
    filter: Document,
    projection: Document,
) -> Result<Vec<Document>, Error> {
    within(async {
        collection
            .find(filter)
            .projection(projection)
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await
}

#[tokio::test]
async fn positional_elem_match_and_slice_projections() {
    let target = Target::replica_set().await;
    let (_client, schools) = collection(&target, "projection").await;
    within(schools.insert_one(doc! {
        "_id": 1,
        "grades": [70, 87, 90],
        "students": [{ "name": "a", "age": 10 }, { "name": "b", "age": 12 }, { "name": "c", "age": 12 }],
        "scores": [1, 6, 8, 9],
    }))
    .await
    .unwrap();
    let found = projected(
        &schools,
        doc! { "grades": { "$gte": 85 } },
        doc! { "grades.$": 1 },
    )
    .await
    .unwrap();
    assert_eq!(found, vec![doc! { "_id": 1, "grades": [87] }]);
    let found = projected(
        &schools,
        doc! {},
        doc! { "students": { "$elemMatch": { "age": 12 } } },
    )
    .await
    .unwrap();
    assert_eq!(
        found,
        vec![doc! { "_id": 1, "students": [{ "name": "b", "age": 12 }] }]
    );
    let found = projected(
        &schools,
        doc! {},
        doc! { "scores": { "$elemMatch": { "$gt": 5 } }, "_id": 0 },
    )
    .await
    .unwrap();
    assert_eq!(found, vec![doc! { "scores": [6] }]);
    let found = projected(
        &schools,
        doc! {},
        doc! { "scores": { "$slice": [1, 2] }, "grades": 0, "students": 0 },
    )
    .await
    .unwrap();
    assert_eq!(found, vec![doc! { "_id": 1, "scores": [6, 8] }]);
    for (filter, projection, code) in [
        (
            doc! { "grades": 87 },
            doc! { "grades.$": 1, "scores.$": 1 },
            31276,
        ),
        (doc! { "_id": 1 }, doc! { "grades.$": 1 }, 31277),
        (
            doc! { "grades": 87 },
            doc! { "grades.$": 1, "students": { "$elemMatch": { "age": 12 } } },
            31255,
        ),
    ] {
        let error = projected(&schools, filter, projection).await.unwrap_err();
        assert_eq!(command_code(&error), code, "{error}");
    }
}

#[tokio::test]
async fn mod_bit_tests_and_all_with_elem_match() {
    let target = Target::replica_set().await;
    let (_client, numbers) = collection(&target, "numbers").await;
    within(numbers.insert_many(vec![
        doc! { "_id": 1, "n": 54, "qty": [{ "size": "M", "num": 100 }, { "size": "L", "num": 50 }] },
        doc! { "_id": 2, "n": 5.5, "qty": [{ "size": "M", "num": 50 }] },
        doc! { "_id": 3, "n": -1, "qty": [] },
        doc! { "_id": 4, "n": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: vec![0b0010_0000] }), "qty": [] },
    ]))
    .await
    .unwrap();
    assert_eq!(
        ids(&numbers, doc! { "n": { "$mod": [4, 1] } }).await,
        vec![2]
    );
    assert_eq!(
        ids(&numbers, doc! { "n": { "$mod": [2, 0] } }).await,
        vec![1]
    );
    assert_eq!(
        ids(&numbers, doc! { "n": { "$bitsAllSet": [1, 5] } }).await,
        vec![1, 3]
    );
    assert_eq!(
        ids(&numbers, doc! { "n": { "$bitsAnySet": 32 } }).await,
        vec![1, 3, 4]
    );
    assert_eq!(
        ids(&numbers, doc! { "n": { "$bitsAllClear": [0] } }).await,
        vec![1, 4]
    );
    assert_eq!(
        ids(&numbers, doc! { "n": { "$bitsAnyClear": [1, 5] } }).await,
        vec![4]
    );
    let both = doc! { "qty": { "$all": [
        { "$elemMatch": { "size": "M", "num": { "$gt": 50 } } },
        { "$elemMatch": { "num": 50 } },
    ] } };
    assert_eq!(ids(&numbers, both).await, vec![1]);
    assert_eq!(
        find_error(&numbers, doc! { "n": { "$mod": [0, 1] } }).await,
        2
    );
    assert_eq!(find_error(&numbers, doc! { "n": { "$mod": [4] } }).await, 2);
    assert_eq!(
        find_error(&numbers, doc! { "n": { "$bitsAllSet": -1 } }).await,
        9
    );
    assert_eq!(
        find_error(
            &numbers,
            doc! { "qty": { "$all": [{ "$elemMatch": { "num": 50 } }, 5] } }
        )
        .await,
        2
    );
}

#[tokio::test]
async fn a_pathological_regex_is_answered_without_backtracking() {
    let target = Target::replica_set().await;
    let (_client, texts) = collection(&target, "hostile_regex").await;
    within(texts.insert_one(doc! { "_id": 1, "s": "a".repeat(50_000) }))
        .await
        .unwrap();
    // Exponential for a naive backtracking engine (PCRE2 gets out by noticing that no `b`
    // occurs); the linear engine needs no such luck.
    let found = ids(&texts, doc! { "s": { "$regex": "^(a|aa)*b$" } }).await;
    assert!(found.is_empty());
    assert_eq!(
        find_error(&texts, doc! { "s": { "$regex": "a".repeat(40_000) } }).await,
        51091
    );
}
