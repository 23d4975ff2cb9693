// Command sarama-client drives Strom with sarama (Debian's golang-github-shopify-sarama-dev) configured
// for one Kafka version, the way sarama-based tools (Burrow, exporters, Go services) do: ClusterAdmin
// calls, produce with every acks setting and codec, consume with a consumer group and commit. Each step
// prints one JSON line {"step": ..., "ok": ..., "detail": ...}; the exit status is non-zero if one failed.
//
//	sarama-client -brokers 127.0.0.1:9092 -version 0.10.2.0 -topic t -group g
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

var failed bool

func report(step string, err error, detail interface{}) {
	line := map[string]interface{}{"step": step, "ok": err == nil, "detail": detail}
	if err != nil {
		line["error"] = err.Error()
		failed = true
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

type codec struct {
	name  string
	codec sarama.CompressionCodec
	since sarama.KafkaVersion
}

var codecs = []codec{
	{"none", sarama.CompressionNone, sarama.V0_8_2_0},
	{"gzip", sarama.CompressionGZIP, sarama.V0_8_2_0},
	{"snappy", sarama.CompressionSnappy, sarama.V0_8_2_0},
	{"lz4", sarama.CompressionLZ4, sarama.V0_10_0_0},
}

// zstdRefused checks what Kafka 3.9 does with sarama 1.22's zstd: that sarama sends zstd batches in
// Produce v3 (its bug, fixed in 1.23), and Kafka refuses zstd below Produce v7 with
// UNSUPPORTED_COMPRESSION_TYPE; so must Strom.
func zstdRefused(brokers []string, version sarama.KafkaVersion, topic string) {
	conf := config(version)
	conf.Producer.RequiredAcks = sarama.WaitForLocal
	conf.Producer.Compression = sarama.CompressionZSTD
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	conf.Producer.Retry.Max = 0
	producer, err := sarama.NewSyncProducer(brokers, conf)
	if err != nil {
		report("produce codec=zstd is refused", err, nil)
		return
	}
	defer producer.Close()
	_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0,
		Value: sarama.StringEncoder("zstd")})
	if err == sarama.ErrUnsupportedCompressionType {
		err = nil
	} else {
		err = fmt.Errorf("want UNSUPPORTED_COMPRESSION_TYPE, got %v", err)
	}
	report("produce codec=zstd is refused (Produce v3, as Kafka refuses it)", err, nil)
}

var acks = []struct {
	name string
	acks sarama.RequiredAcks
}{{"0", sarama.NoResponse}, {"1", sarama.WaitForLocal}, {"all", sarama.WaitForAll}}

func config(version sarama.KafkaVersion) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = version
	c.ClientID = "sarama-" + version.String()
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	return c
}

// produce sends `perBatch` messages per (acks, codec) to partition 0 and returns how many were sent.
func produce(brokers []string, version sarama.KafkaVersion, topic string, perBatch int) int {
	sent := 0
	for _, a := range acks {
		for _, c := range codecs {
			if !version.IsAtLeast(c.since) {
				continue
			}
			conf := config(version)
			conf.Producer.RequiredAcks = a.acks
			conf.Producer.Compression = c.codec
			conf.Producer.Partitioner = sarama.NewManualPartitioner
			step := fmt.Sprintf("produce acks=%s codec=%s", a.name, c.name)
			producer, err := sarama.NewSyncProducer(brokers, conf)
			if err != nil {
				report(step, err, nil)
				continue
			}
			messages := make([]*sarama.ProducerMessage, perBatch)
			for i := range messages {
				value := fmt.Sprintf("%s-%s-%d-%s", a.name, c.name, i, string(make([]byte, 200)))
				messages[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprint(i)),
					Value: sarama.StringEncoder(value)}
			}
			err = producer.SendMessages(messages)
			if err == nil {
				sent += perBatch
			}
			report(step, err, perBatch)
			producer.Close()
		}
	}
	return sent
}

type handler struct {
	mu       sync.Mutex
	received int
	want     int
	done     chan struct{}
	once     sync.Once
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		session.MarkMessage(message, "")
		h.mu.Lock()
		h.received++
		if h.received >= h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

// consumeGroup consumes `want` messages in group `group` and commits (the offset manager flushes on close).
func consumeGroup(brokers []string, version sarama.KafkaVersion, topic, group string, want int) {
	conf := config(version)
	conf.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	consumerGroup, err := sarama.NewConsumerGroup(brokers, group, conf)
	if err != nil {
		report("consumer group", err, nil)
		return
	}
	h := &handler{want: want, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := consumerGroup.Consume(ctx, []string{topic}, h); err != nil {
				finished <- err
				return
			}
		}
		finished <- nil
	}()
	select {
	case <-h.done:
		err = nil
	case err = <-finished:
	case <-time.After(60 * time.Second):
		err = fmt.Errorf("received %d of %d messages", h.received, want)
	}
	cancel()
	if closeErr := consumerGroup.Close(); err == nil {
		err = closeErr
	}
	report("consume with a consumer group and commit", err, h.received)
}

func admin(brokers []string, version sarama.KafkaVersion, topic, group string, produced int) {
	ca, err := sarama.NewClusterAdmin(brokers, config(version))
	if err != nil {
		report("cluster admin", err, nil)
		return
	}
	defer ca.Close()
	brokersSeen, controller, err := ca.DescribeCluster()
	report("DescribeCluster", err, map[string]interface{}{"brokers": len(brokersSeen), "controller": controller})
	described, err := ca.DescribeTopics([]string{topic})
	if err == nil && (len(described) != 1 || described[0].Err != sarama.ErrNoError) {
		err = fmt.Errorf("DescribeTopics: %+v", described)
	}
	report("DescribeTopics", err, nil)
	extra := topic + "-admin"
	err = ca.CreateTopic(extra, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	report("CreateTopic", err, extra)
	// sarama itself refuses DescribeConfigs (hence ListTopics) and AlterConfigs below Kafka 0.11.
	if version.IsAtLeast(sarama.V0_11_0_0) {
		topics, err := ca.ListTopics()
		if err == nil && topics[topic].NumPartitions != 1 {
			err = fmt.Errorf("topic %s not listed with 1 partition: %+v", topic, topics[topic])
		}
		report("ListTopics", err, len(topics))
		retention := "3600000"
		err = ca.AlterConfig(sarama.TopicResource, extra, map[string]*string{"retention.ms": &retention}, false)
		report("AlterConfig", err, nil)
		entries, err := ca.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: extra})
		found := ""
		for _, e := range entries {
			if e.Name == "retention.ms" {
				found = e.Value
			}
		}
		if err == nil && found != retention {
			err = fmt.Errorf("retention.ms is %q", found)
		}
		report("DescribeConfig", err, found)
	}
	if version.IsAtLeast(sarama.V1_0_0_0) {
		report("CreatePartitions", ca.CreatePartitions(extra, 2, nil, false), 2)
	}
	if version.IsAtLeast(sarama.V0_11_0_0) {
		report("DeleteRecords", ca.DeleteRecords(topic, map[int32]int64{0: 1}), 1)
	}
	groups, err := ca.ListConsumerGroups()
	if err == nil {
		if _, ok := groups[group]; !ok {
			err = fmt.Errorf("group %s not listed: %v", group, groups)
		}
	}
	report("ListConsumerGroups", err, len(groups))
	descriptions, err := ca.DescribeConsumerGroups([]string{group})
	if err == nil && (len(descriptions) != 1 || descriptions[0].State != "Empty") {
		err = fmt.Errorf("DescribeConsumerGroups: %+v", descriptions[0])
	}
	report("DescribeConsumerGroups", err, nil)
	offsets, err := ca.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0}})
	committed := int64(-2)
	if err == nil {
		block := offsets.GetBlock(topic, 0)
		if block == nil || block.Err != sarama.ErrNoError || block.Offset != int64(produced) {
			err = fmt.Errorf("committed offset %+v, want %d", block, produced)
		} else {
			committed = block.Offset
		}
	}
	report("ListConsumerGroupOffsets", err, committed)
	report("DeleteTopic", ca.DeleteTopic(extra), extra)
}

func main() {
	bootstrap := flag.String("brokers", "127.0.0.1:9092", "bootstrap broker")
	versionFlag := flag.String("version", sarama.MaxVersion.String(), "Kafka version sarama speaks")
	topic := flag.String("topic", "sarama", "topic (created with 1 partition first)")
	group := flag.String("group", "sarama-group", "consumer group")
	perBatch := flag.Int("messages", 20, "messages per (acks, codec)")
	flag.Parse()
	version, err := sarama.ParseKafkaVersion(*versionFlag)
	if err != nil {
		report("version", err, *versionFlag)
		os.Exit(2)
	}
	brokers := []string{*bootstrap}
	ca, err := sarama.NewClusterAdmin(brokers, config(version))
	if err == nil {
		err = ca.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
		ca.Close()
	}
	report("create the test topic", err, *topic)
	produced := produce(brokers, version, *topic, *perBatch)
	if version.IsAtLeast(sarama.V2_1_0_0) {
		zstdRefused(brokers, version, *topic)
	}
	consumeGroup(brokers, version, *topic, *group, produced)
	admin(brokers, version, *topic, *group, produced)
	if failed {
		os.Exit(1)
	}
}
