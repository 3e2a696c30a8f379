// kafkajs against the lab's wire door (tests/test_wire_kafkajs.py runs it with node).
// argv: bootstrap servers, topic. Prints one JSON line: what each step returned and what a
// read_committed consumer read (value, partition, offset), or {"error": ...}.
const { Kafka, logLevel } = require('kafkajs')

const [brokers, topic] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-eos', brokers: brokers.split(','), logLevel: logLevel.NOTHING,
                          retry: { retries: 10 } })

async function main () {
  const out = {}
  const idem = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await idem.connect()
  const sent = await idem.send({ topic, acks: -1, messages: [{ value: 'idem-0' }, { value: 'idem-1' }] })
  out.idempotent = sent.map(r => ({ partition: r.partition, baseOffset: r.baseOffset, errorCode: r.errorCode }))
  await idem.disconnect()

  const tx = kafka.producer({ transactionalId: 'kafkajs-tx', idempotent: true, maxInFlightRequests: 1 })
  await tx.connect()
  let t = await tx.transaction()
  await t.send({ topic, messages: [{ value: 'committed-0' }, { value: 'committed-1' }] })
  await t.commit()
  t = await tx.transaction()
  await t.send({ topic, messages: [{ value: 'aborted-0' }] })
  await t.abort()
  t = await tx.transaction()
  await t.send({ topic, messages: [{ value: 'committed-2' }] })
  await t.commit()
  await tx.disconnect()
  out.transactions = 'committed, aborted, committed'

  const consumer = kafka.consumer({ groupId: 'kafkajs-reader', readUncommitted: false })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const read = []
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        read.push({ value: message.value.toString(), partition, offset: Number(message.offset) })
        if (read.length >= 5) resolve()
      }
    }).catch(reject)
  })
  await new Promise(r => setTimeout(r, 1500))           // anything extra would arrive now
  out.read = read
  await consumer.disconnect()
  console.log(JSON.stringify(out))
}

main().then(() => process.exit(0), e => {
  console.log(JSON.stringify({ error: `${e.name}: ${e.message}`, type: e.type || null }))
  process.exit(1)
})
