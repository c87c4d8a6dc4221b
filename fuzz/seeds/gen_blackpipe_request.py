#!/usr/bin/env python3
"""Writes the seed corpus of the blackpipe_request fuzz target into seeds/blackpipe_request/.

Each seed follows the target's input layout: byte 0 is the mode (0 raw frames, 1 OP_MSG body,
2 command from the target's COMMANDS table), byte 1 its parameter, then the payload. The BSON
encoder below covers just the types the seeds use. Run from the fuzz/ directory:
    python3 seeds/gen_blackpipe_request.py
"""

import os
import struct

# Indexes into COMMANDS in fuzz_targets/blackpipe_request.rs; keep them in step.
COMMANDS = [
    "insert", "update", "delete", "find", "getMore", "killCursors", "findAndModify", "count",
    "distinct", "aggregate", "createIndexes", "listIndexes", "dropIndexes", "listCollections",
    "listDatabases", "drop", "dropDatabase", "create", "dbStats", "renameCollection",
    "endSessions", "hello", "isMaster", "ping", "buildInfo", "commitTransaction",
    "abortTransaction", "bulkWrite", "collMod", "collStats", "serverStatus", "killAllSessions",
]


def cstring(text):
    return text.encode() + b"\x00"


def element(name, value):
    key = cstring(name)
    if isinstance(value, bool):
        return b"\x08" + key + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"\x10" + key + struct.pack("<i", value)
        return b"\x12" + key + struct.pack("<q", value)
    if isinstance(value, float):
        return b"\x01" + key + struct.pack("<d", value)
    if isinstance(value, str):
        data = value.encode()
        return b"\x02" + key + struct.pack("<i", len(data) + 1) + data + b"\x00"
    if isinstance(value, list):
        return b"\x04" + key + document([(str(i), v) for i, v in enumerate(value)])
    if isinstance(value, bytes):
        return b"\x05" + key + struct.pack("<i", len(value)) + b"\x04" + value
    if value is None:
        return b"\x0a" + key
    return b"\x03" + key + document(value)


def document(fields):
    if isinstance(fields, dict):
        fields = list(fields.items())
    body = b"".join(element(name, value) for name, value in fields)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def header(length, request_id, opcode):
    return struct.pack("<iiii", length, request_id, 0, opcode)


def op_msg(body, flags=0, request_id=1):
    payload = struct.pack("<I", flags) + b"\x00" + body
    return header(16 + len(payload), request_id, 2013) + payload


def op_msg_with_sequence(body, identifier, documents):
    sequence = cstring(identifier) + b"".join(documents)
    section = b"\x01" + struct.pack("<i", 4 + len(sequence)) + sequence
    payload = struct.pack("<I", 0) + b"\x00" + body + section
    return header(16 + len(payload), 2, 2013) + payload


def op_query(collection, query):
    payload = struct.pack("<i", 0) + cstring(collection) + struct.pack("<ii", 0, -1) + query
    return header(16 + len(payload), 3, 2004) + payload


def op_compressed_noop(message):
    original_opcode = struct.unpack("<i", message[12:16])[0]
    rest = message[16:]
    payload = struct.pack("<iiB", original_opcode, len(rest), 0) + rest
    return header(16 + len(payload), 4, 2012) + payload


def seeds():
    lsid = {"id": bytes(range(16))}
    out = {}
    # Mode 2: a command name from the table and its arguments (the first field is its value).
    commands = {
        "insert": [("c", "orders"), ("documents", [{"_id": 1, "item": "pen", "qty": 3}])],
        "update": [("c", "orders"), ("updates", [{"q": {"_id": 1}, "u": {"$inc": {"qty": 1}}, "upsert": True}])],
        "delete": [("c", "orders"), ("deletes", [{"q": {"qty": {"$gt": 2}}, "limit": 0}])],
        "find": [("c", "orders"), ("filter", {"item": {"$in": ["pen", "ink"]}}), ("sort", {"qty": -1}), ("batchSize", 1)],
        "getMore": [("c", 12345), ("collection", "orders"), ("batchSize", 2)],
        "killCursors": [("c", "orders"), ("cursors", [12345])],
        "findAndModify": [("c", "orders"), ("query", {"_id": 1}), ("update", {"$set": {"a.b": 1}}), ("new", True)],
        "count": [("c", "orders"), ("query", {"qty": {"$gte": 1}})],
        "distinct": [("c", "orders"), ("key", "item")],
        "aggregate": [("c", "orders"), ("pipeline", [{"$match": {"qty": {"$gt": 0}}}, {"$group": {"_id": "$item", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]), ("cursor", {})],
        "createIndexes": [("c", "orders"), ("indexes", [{"key": {"item": 1}, "name": "item_1", "unique": True}])],
        "listIndexes": [("c", "orders")],
        "dropIndexes": [("c", "orders"), ("index", "item_1")],
        "listCollections": [("c", 1), ("filter", {"name": "orders"})],
        "listDatabases": [("c", 1), ("nameOnly", True), ("$db", "admin")],
        "drop": [("c", "orders")],
        "dropDatabase": [("c", 1)],
        "create": [("c", "capped"), ("capped", True), ("size", 4096)],
        "dbStats": [("c", 1)],
        "renameCollection": [("c", "fuzz.orders"), ("to", "fuzz.renamed"), ("$db", "admin")],
        "endSessions": [("c", [lsid])],
        "hello": [("c", 1), ("topologyVersion", {"processId": 1, "counter": 0}), ("maxAwaitTimeMS", 10)],
        "isMaster": [("c", 1), ("helloOk", True), ("client", {"application": {"name": "seed"}})],
        "ping": [("c", 1), ("$db", "admin")],
        "buildInfo": [("c", 1)],
        "commitTransaction": [("c", 1), ("lsid", lsid), ("txnNumber", 1), ("autocommit", False), ("$db", "admin")],
        "abortTransaction": [("c", 1), ("lsid", lsid), ("txnNumber", 1), ("autocommit", False), ("$db", "admin")],
        "bulkWrite": [("c", 1), ("ops", [{"insert": 0, "document": {"x": 1}}]), ("nsInfo", [{"ns": "fuzz.orders"}]), ("$db", "admin")],
        "collMod": [("c", "orders"), ("validator", {})],
        "collStats": [("c", "orders")],
        "serverStatus": [("c", 1)],
        "killAllSessions": [("c", [])],
    }
    for name, fields in commands.items():
        index = COMMANDS.index(name)
        out["cmd_" + name] = bytes([2, index]) + document(fields)
    # A retryable write and a transaction's first statement.
    out["cmd_insert_retryable"] = bytes([2, 0]) + document(
        [("c", "orders"), ("documents", [{"_id": 2}]), ("lsid", lsid), ("txnNumber", 7)])
    # A change stream resuming from a token, with the per-event stages after it.
    out["cmd_aggregate_change_stream"] = bytes([2, 9]) + document(
        [("c", "orders"), ("pipeline", [
            {"$changeStream": {"fullDocument": "updateLookup", "fullDocumentBeforeChange": "whenAvailable",
                               "showExpandedEvents": True,
                               "resumeAfter": {"_data": "016592008000000002FF00"}}},
            {"$match": {"operationType": {"$in": ["insert", "update"]}}},
            {"$project": {"fullDocument": 1, "ns": 1}}]), ("cursor", {"batchSize": 1})])
    out["cmd_find_in_txn"] = bytes([2, 3]) + document(
        [("c", "orders"), ("lsid", lsid), ("txnNumber", 2), ("startTransaction", True), ("autocommit", False)])

    # Mode 1: a whole command body inside a well-formed OP_MSG (byte 1: flag bits).
    out["body_ping"] = bytes([1, 0]) + document([("ping", 1), ("$db", "admin")])
    out["body_find_exhaust"] = bytes([1, 0]) + document([("find", "orders"), ("batchSize", 1), ("$db", "fuzz")])
    out["body_insert_more_to_come"] = bytes([1, 2]) + document(
        [("insert", "orders"), ("documents", [{"x": 1}]), ("writeConcern", {"w": 0}), ("$db", "fuzz")])

    # Mode 0: raw frames, written in pieces (byte 1: the cut points).
    ping = op_msg(document([("ping", 1), ("$db", "admin")]))
    insert_sequence = op_msg_with_sequence(
        document([("insert", "orders"), ("$db", "fuzz")]), "documents",
        [document([("_id", 10)]), document([("_id", 11), ("tags", ["a", "b"])])])
    hello_query = op_query("admin.$cmd", document([("isMaster", 1), ("helloOk", True)]))
    out["raw_ping"] = bytes([0, 0]) + ping
    out["raw_two_frames_split"] = bytes([0, 0b011001]) + ping + insert_sequence
    out["raw_op_query_hello"] = bytes([0, 0]) + hello_query
    out["raw_compressed_noop"] = bytes([0, 0]) + op_compressed_noop(ping)
    out["raw_checksum_flag"] = bytes([0, 0]) + op_msg(document([("ping", 1), ("$db", "admin")]), flags=1) + b"\x00\x00\x00\x00"
    return out


def main():
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blackpipe_request")
    os.makedirs(folder, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(folder, name), "wb") as file:
            file.write(data)


if __name__ == "__main__":
    main()
