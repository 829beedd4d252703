#!/usr/bin/env node
// dynalite.js DYNALITE_DIR [dynalite's options]: dynalite (node_modules/dynalite, which has no
// transactions) with TransactWriteItems added for what the repository's drivers send: Put, Delete
// and ConditionCheck items, each with an optional ConditionExpression, on tables without
// secondary indexes. Every other request goes to dynalite unchanged. A transaction locks its
// items' keys, checks every condition, and then writes all its items in one LevelDB batch, which
// is atomic: a server killed at any moment holds all of the transaction's writes or none, as
// DynamoDB does. A failed condition cancels it whole (TransactionCanceledException with its
// CancellationReasons). A request its client abandons ends that request only (dynalite alone
// would end the server).
'use strict'
const path = require('path')

const dir = process.argv[2]
const opts = {}
for (let i = 3; i < process.argv.length; i++) {
  const a = process.argv[i]
  if (!a.startsWith('--')) continue
  const name = a.slice(2), next = process.argv[i + 1]
  if (next === undefined || next.startsWith('--')) opts[name] = true
  else { opts[name] = /^\d+$/.test(next) ? Number(next) : next; i++ }
}

// dynalite makes its store inside; keep a hold of it.
const dbmod = require(path.join(dir, 'db'))
const create = dbmod.create
let store
dbmod.create = function () { store = create.apply(this, arguments); return store }
const dynalite = require(dir)

const validations = require(path.join(dir, 'validations'))
const putV = require(path.join(dir, 'validations', 'putItem'))
const deleteV = require(path.join(dir, 'validations', 'deleteItem'))
const crc32 = require(path.join(dir, '..', 'buffer-crc32'))

const server = dynalite(opts)
const handlers = server.listeners('request')
server.removeAllListeners('request')
server.on('request', function (req, res) {
  // A client that hangs up in the middle of a request (its deadline, or a read it no longer
  // needs because another region answered) makes Node emit 'error' ("aborted") on the request,
  // and dynalite's listener rethrows it, which ends the whole server; DynamoDB carries on, and so
  // does this server: such an error only ends that request.
  const on = req.on
  req.on = function (ev, fn) {
    if (ev === 'error') return on.call(this, ev, function () { res.destroy() })
    return on.apply(this, arguments)
  }
  if ((req.headers['x-amz-target'] || '') !== 'DynamoDB_20120810.TransactWriteItems') {
    for (const h of handlers) h.call(server, req, res)
    return
  }
  let body = ''
  req.on('data', function (d) { body += d })
  req.on('end', function () {
    let data
    try { data = JSON.parse(body) }
    catch { return send(res, 400, { __type: 'com.amazon.coral.service#SerializationException' }) }
    transact(data, function (status, out) { send(res, status, out) })
  })
})

function send (res, status, out) {
  const body = JSON.stringify(out)
  res.statusCode = status
  res.setHeader('x-amzn-RequestId', 'transact-' + Date.now())
  res.setHeader('x-amz-crc32', crc32.unsigned(body))
  res.setHeader('Content-Type', 'application/x-amz-json-1.0')
  res.setHeader('Content-Length', Buffer.byteLength(body, 'utf8'))
  res.end(body)
}

function invalid (msg) {
  return [ 400, { __type: 'com.amazon.coral.validate#ValidationException', message: msg } ]
}

function transact (data, done) {
  const entries = data.TransactItems || []
  if (!entries.length || entries.length > 100) return done(...invalid('TransactItems must hold 1 to 100 items'))
  const ops = []
  for (const e of entries) {
    const kind = Object.keys(e)[0]
    const spec = e[kind]
    if (kind !== 'Put' && kind !== 'Delete' && kind !== 'ConditionCheck')
      return done(...invalid('this test server runs TransactWriteItems with Put, Delete and ConditionCheck items only, not ' + kind))
    const v = kind === 'Put' ? putV : deleteV
    let req = { TableName: spec.TableName, ConditionExpression: spec.ConditionExpression,
      ExpressionAttributeNames: spec.ExpressionAttributeNames, ExpressionAttributeValues: spec.ExpressionAttributeValues }
    if (kind === 'Put') req.Item = spec.Item
    else req.Key = spec.Key
    for (const k of Object.keys(req)) if (req[k] === undefined) delete req[k]
    try {
      req = validations.checkTypes(req, v.types)
      validations.checkValidations(req, v.types, v.custom, store)
    }
    catch (err) {
      if (err.statusCode) return done(err.statusCode, err.body)
      throw err
    }
    ops.push({ kind, req })
  }
  let pending = ops.length
  let failed = false
  for (const op of ops) {
    store.getTable(op.req.TableName, function (err, table) {
      if (failed) return
      if (err) { failed = true; return done(err.statusCode || 500, err.body || { message: String(err) }) }
      if ((table.GlobalSecondaryIndexes || []).length || (table.LocalSecondaryIndexes || []).length) {
        failed = true
        return done(...invalid('this test server runs transactions only on tables without secondary indexes'))
      }
      op.table = table
      op.key = dbmod.createKey(op.req.Item || op.req.Key, table)
      op.lockKey = op.req.TableName + '~' + op.key
      if (--pending === 0) locked(ops, done)
    })
  }
}

// locked takes every item's lock (in one order, so transactions never deadlock), then checks and
// writes.
function locked (ops, done) {
  const seen = {}
  for (const op of ops) {
    if (seen[op.lockKey]) return done(...invalid('Transaction request cannot include multiple operations on one item'))
    seen[op.lockKey] = true
  }
  const order = ops.slice().sort(function (a, b) { return a.lockKey < b.lockKey ? -1 : 1 })
  const releases = []
  function finish (status, out) {
    let release = function () { done(status, out) }
    for (const r of releases) release = r(release)
    release()
  }
  function take (i) {
    if (i === order.length) return check(ops, finish)
    const op = order[i]
    store.getItemDb(op.req.TableName).lock(op.key, function (release) {
      releases.unshift(release)
      take(i + 1)
    })
  }
  take(0)
}

function check (ops, done) {
  let pending = ops.length
  for (const op of ops) {
    store.getItemDb(op.req.TableName).get(op.key, function (err, existing) {
      if (err && err.name !== 'NotFoundError') op.err = err
      op.failed = dbmod.checkConditional(op.req, err ? undefined : existing) != null
      if (--pending === 0) write(ops, done)
    })
  }
}

function write (ops, done) {
  for (const op of ops) if (op.err) return done(500, { message: String(op.err) })
  if (ops.some(function (op) { return op.failed })) {
    const reasons = ops.map(function (op) {
      return op.failed ? { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' } : { Code: 'None' }
    })
    return done(400, {
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [' +
        reasons.map(function (r) { return r.Code }).join(', ') + ']',
      CancellationReasons: reasons,
    })
  }
  const batch = []
  for (const op of ops) {
    const key = 'item-' + op.req.TableName + '~' + op.key
    if (op.kind === 'Put') batch.push({ type: 'put', key, value: op.req.Item })
    else if (op.kind === 'Delete') batch.push({ type: 'del', key })
  }
  if (!batch.length) return done(200, {})
  store.db.batch(batch, function (err) {
    if (err) return done(500, { message: String(err) })
    done(200, {})
  })
}

server.listen(opts.port || 4567, opts.host || undefined, function () {
  const a = server.address()
  console.log('Dynalite listening at: http://%s:%s', opts.host || 'localhost', a.port)
})
