// The everyday surface of the official Node.js driver against a blackpipe replica set: each
// check prints `ok` or `FAIL` with the server's answer. Run by ../js-check.sh.
const { MongoClient, GridFSBucket } = require('mongodb');
(async () => {
  const client = new MongoClient(process.env.BLACKPIPE_URI, { serverSelectionTimeoutMS: 5000 });
  await client.connect();
  const db = client.db('nodecheck');
  await db.dropDatabase();
  const c = db.collection('people');
  const results = [];
  async function check(name, fn) {
    try { const r = await fn(); results.push(['ok', name]); return r; }
    catch (e) { results.push(['FAIL', name, (e.code || '') + ' ' + e.message.slice(0, 160)]); }
  }
  await check('insertMany', () => c.insertMany([{ _id: 1, name: 'ann', age: 31, city: 'Oslo', joined: new Date('2024-02-03') }, { _id: 2, name: 'bob', age: 25, city: 'Rome', joined: new Date('2023-05-06') }, { _id: 3, name: 'cy', age: 40, city: 'Oslo', joined: new Date('2022-07-08') }]));
  await check('find sort/limit/projection', async () => { const d = await c.find({ age: { $gt: 20 } }).sort({ age: -1 }).limit(2).project({ name: 1 }).toArray(); if (d.length !== 2 || d[0].name !== 'cy') throw new Error(JSON.stringify(d)); });
  await check('updateOne upsert', () => c.updateOne({ _id: 4 }, { $set: { name: 'dee', age: 22, city: 'Lima' } }, { upsert: true }));
  await check('countDocuments', async () => { const n = await c.countDocuments({ city: 'Oslo' }); if (n !== 2) throw new Error(n); });
  await check('estimatedDocumentCount', () => c.estimatedDocumentCount());
  await check('distinct', () => c.distinct('city'));
  await check('createIndex/listIndexes', async () => { await c.createIndex({ city: 1, age: -1 }); return c.listIndexes().toArray(); });
  await check('aggregate $group/$sort', () => c.aggregate([{ $group: { _id: '$city', n: { $sum: 1 }, avg: { $avg: '$age' } } }, { $sort: { n: -1 } }]).toArray());
  await check('aggregate $dateToString/$toString', () => c.aggregate([{ $project: { d: { $dateToString: { date: '$joined', format: '%Y-%m' } }, s: { $toString: '$age' } } }]).toArray());
  await check('aggregate $map/$filter', () => c.aggregate([{ $project: { x: { $map: { input: [1, 2, 3], in: { $multiply: ['$$this', '$age'] } } } } }]).toArray());
  await db.collection('orders').insertMany([{ person: 1, total: 10 }, { person: 1, total: 5 }, { person: 2, total: 7 }]);
  await check('aggregate $lookup', () => c.aggregate([{ $lookup: { from: 'orders', localField: '_id', foreignField: 'person', as: 'orders' } }]).toArray());
  await check('aggregate $facet', () => c.aggregate([{ $facet: { a: [{ $count: 'n' }], b: [{ $limit: 1 }] } }]).toArray());
  await check('aggregate $bucket', () => c.aggregate([{ $bucket: { groupBy: '$age', boundaries: [0, 30, 50], default: 'other' } }]).toArray());
  await check('aggregate $unionWith', () => c.aggregate([{ $unionWith: 'orders' }]).toArray());
  await check('aggregate $sample', () => c.aggregate([{ $sample: { size: 2 } }]).toArray());
  await check('aggregate $setWindowFields', () => c.aggregate([{ $setWindowFields: { sortBy: { age: 1 }, output: { r: { $rank: {} } } } }]).toArray());
  await check('aggregate $group $top', () => c.aggregate([{ $group: { _id: null, t: { $top: { sortBy: { age: 1 }, output: '$name' } } } }]).toArray());
  await check('explain', () => c.find({ city: 'Oslo' }).explain());
  await check('aggregate explain', () => c.aggregate([{ $match: { city: 'Oslo' } }]).explain());
  await check('bulkWrite', () => c.bulkWrite([{ insertOne: { document: { _id: 9 } } }, { updateOne: { filter: { _id: 9 }, update: { $set: { a: 1 } } } }, { deleteOne: { filter: { _id: 9 } } }]));
  await check('client bulkWrite', () => client.bulkWrite([{ name: 'insertOne', namespace: 'nodecheck.people', document: { _id: 10 } }]));
  await check('transaction withTransaction', async () => { const s = client.startSession(); try { await s.withTransaction(async () => { await c.updateOne({ _id: 1 }, { $inc: { age: 1 } }, { session: s }); await db.collection('orders').insertOne({ person: 1, total: 1 }, { session: s }); }); } finally { await s.endSession(); } });
  await check('change stream', async () => { const cs = c.watch(); const next = cs.next(); await new Promise(r => setTimeout(r, 200)); await c.insertOne({ _id: 11 }); const ev = await next; await cs.close(); if (ev.operationType !== 'insert') throw new Error(ev.operationType); });
  await check('gridfs', async () => { const b = new GridFSBucket(db); await new Promise((res, rej) => { const up = b.openUploadStream('f.txt'); up.on('finish', res); up.on('error', rej); up.end(Buffer.from('hello gridfs')); }); const chunks = []; await new Promise((res, rej) => b.openDownloadStreamByName('f.txt').on('data', d => chunks.push(d)).on('end', res).on('error', rej)); if (Buffer.concat(chunks).toString() !== 'hello gridfs') throw new Error('content'); });
  await check('db.stats', () => db.stats());
  await check('$collStats', () => c.aggregate([{ $collStats: { storageStats: {} } }]).toArray());
  await check('serverStatus', () => db.admin().serverStatus());
  await check('replSetGetStatus', () => db.admin().command({ replSetGetStatus: 1 }));
  await check('listDatabases', () => db.admin().listDatabases());
  await check('buildInfo', () => db.admin().buildInfo());
  await check('currentOp', () => db.admin().command({ currentOp: 1 }));
  await check('$currentOp', () => client.db('admin').aggregate([{ $currentOp: {} }]).toArray());
  await check('local.oplog.rs', () => client.db('local').collection('oplog.rs').find().sort({ $natural: -1 }).limit(1).toArray());
  await check('findOneAndUpdate', () => c.findOneAndUpdate({ _id: 2 }, { $set: { x: 1 } }, { returnDocument: 'after' }));
  await check('rename', () => db.collection('orders').rename('orders2'));
  await check('validate', () => db.command({ validate: 'people' }));
  await check('hostInfo', () => db.admin().command({ hostInfo: 1 }));
  await check('getParameter', () => db.admin().command({ getParameter: 1, featureCompatibilityVersion: 1 }));
  await check('setParameter', () => db.admin().command({ setParameter: 1, logLevel: 0 }));
  await check('usersInfo', () => db.command({ usersInfo: 1 }));
  await check('connectionStatus', () => db.command({ connectionStatus: 1 }));
  for (const r of results) console.log(r.join('  '));
  process.exitCode = results.some(r => r[0] !== 'ok') ? 1 : 0;
  await client.close();
})().catch(e => { console.error('fatal', e); process.exit(1); });
