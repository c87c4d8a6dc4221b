// What a mongosh user runs day to day, against a blackpipe replica set: each check prints
// `ok` or `FAIL` with the answer. Run by ../js-check.sh.
const out = [];
function check(name, fn) { try { const r = fn(); out.push('ok  ' + name); return r; } catch (e) { out.push('FAIL  ' + name + '  ' + String(e.message || e).slice(0, 150)); } }
db = db.getSiblingDB('shellcheck');
db.dropDatabase();
check('insert', () => db.c.insertMany([{ _id: 1, a: 1 }, { _id: 2, a: 2 }]));
check('find', () => db.c.find({ a: { $gt: 0 } }).toArray());
check('db.c.stats()', () => db.c.stats());
check('db.stats()', () => db.stats());
check('db.serverStatus()', () => db.serverStatus());
check('db.hostInfo()', () => db.hostInfo());
check('db.version()', () => db.version());
check('db.currentOp()', () => db.currentOp());
check('rs.status()', () => rs.status());
check('rs.conf()', () => rs.conf());
check('rs.printReplicationInfo()', () => rs.printReplicationInfo());
check('rs.printSecondaryReplicationInfo()', () => rs.printSecondaryReplicationInfo());
check('db.c.find().explain()', () => db.c.find({ a: 1 }).explain());
check('db.c.explain().aggregate', () => db.c.explain().aggregate([{ $match: { a: 1 } }]));
check('db.c.createIndex', () => db.c.createIndex({ a: 1 }));
check('db.c.getIndexes()', () => db.c.getIndexes());
check('db.getCollectionNames()', () => db.getCollectionNames());
check('show dbs', () => db.adminCommand({ listDatabases: 1 }));
check('db.getUsers()', () => db.getUsers());
check('db.c.validate()', () => db.c.validate());
check('db.getLogComponents()', () => db.getLogComponents());
check('db.setLogLevel(1)', () => db.setLogLevel(1));
check('db.getProfilingStatus()', () => db.getProfilingStatus());
check('db.c.aggregate $group', () => db.c.aggregate([{ $group: { _id: null, s: { $sum: '$a' } } }]).toArray());
check('db.c.countDocuments', () => db.c.countDocuments({}));
check('db.c.totalSize()', () => db.c.totalSize());
check('db.c.dataSize()', () => db.c.dataSize());
check('db.c.storageSize()', () => db.c.storageSize());
check('db.c.latencyStats()', () => db.c.latencyStats());
check('db.c.watch', () => { const cs = db.c.watch(); cs.close(); });
check('session transaction', () => { const s = db.getMongo().startSession(); s.startTransaction(); s.getDatabase('shellcheck').c.insertOne({ _id: 3 }); s.commitTransaction(); s.endSession(); });
print(out.join('\n'));
if (out.some(line => line.startsWith('FAIL'))) { quit(1); }
