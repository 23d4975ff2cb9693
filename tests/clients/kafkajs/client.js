// KafkaJS (npm kafkajs) driving Strom: admin create/delete topics, an idempotent producer, a consumer
// group that commits, and the admin calls that read it back (fetch offsets, describe groups). Each step
// prints one JSON line {"step", "ok", "detail"}; the exit status is non-zero if one failed.
//
//   node client.js <bootstrap host:port> <topic> <group>
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, group] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-strom', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  retry: { retries: 10, initialRetryTime: 100 } })
let failed = false

async function step (name, action) {
  try {
    const detail = await action()
    console.log(JSON.stringify({ step: name, ok: true, detail: detail === undefined ? null : detail }))
    return detail
  } catch (error) {
    failed = true
    console.log(JSON.stringify({ step: name, ok: false, error: String(error && error.stack || error) }))
  }
}

function check (condition, message) {
  if (!condition) throw new Error(message)
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  const extra = `${topic}-extra`
  await step('admin.createTopics', async () => {
    check(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }, { topic: extra }], waitForLeaders: true }),
      'createTopics answered false')
  })
  await step('admin.listTopics', async () => {
    const topics = await admin.listTopics()
    check(topics.includes(topic) && topics.includes(extra), `listed ${topics}`)
    return topics.length
  })
  await step('admin.describeCluster', async () => (await admin.describeCluster()).brokers.length)

  const count = 50
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await step('idempotent producer send', async () => {
    const messages = Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 2 }))
    const results = await producer.send({ topic, acks: -1, messages })
    check(results.every(r => r.errorCode === 0), JSON.stringify(results))
    return results.length
  })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await step('consumer group with commits', async () => {
    const seen = new Set()
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`consumed ${seen.size} of ${count}`)), 60000)
      consumer.run({
        autoCommitInterval: 100,
        eachMessage: async ({ message }) => {
          seen.add(message.value.toString())
          if (seen.size === count) { clearTimeout(timer); resolve() }
        }
      }).catch(reject)
    })
    await consumer.commitOffsets([]) // flush what autocommit resolved
    return seen.size
  })
  await consumer.disconnect()

  await step('admin.fetchOffsets', async () => {
    const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] })
    const total = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0)
    check(total === count, `committed ${JSON.stringify(offsets)}`)
    return total
  })
  await step('admin.fetchTopicOffsets', async () => {
    const offsets = await admin.fetchTopicOffsets(topic)
    check(offsets.reduce((sum, p) => sum + Number(p.high), 0) === count, JSON.stringify(offsets))
  })
  await step('admin.listGroups', async () => {
    const { groups } = await admin.listGroups()
    check(groups.some(g => g.groupId === group), JSON.stringify(groups))
  })
  await step('admin.describeGroups', async () => {
    const { groups } = await admin.describeGroups([group])
    check(groups.length === 1 && groups[0].groupId === group && groups[0].errorCode === 0,
      JSON.stringify(groups))
    return groups[0].state
  })
  await step('admin.deleteTopics', async () => {
    await admin.deleteTopics({ topics: [extra] })
    check(!(await admin.listTopics()).includes(extra), 'still listed')
  })
  await admin.disconnect()
  process.exit(failed ? 1 : 0)
}

main().catch(error => {
  console.log(JSON.stringify({ step: 'main', ok: false, error: String(error && error.stack || error) }))
  process.exit(1)
})
