// Command kafkago-client drives Strom with segmentio/kafka-go (Debian's golang-github-segmentio-kafka-go-dev):
// create a topic, produce with each codec kafka-go has (acks 1 and all), consume it back in a consumer group
// with commits, then read the group's committed offset from a fresh reader. Each step prints one JSON line
// {"step": ..., "ok": ..., "detail": ...}; the exit status is non-zero if one failed.
//
//	kafkago-client -brokers 127.0.0.1:9092 -topic t -group g
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
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

func main() {
	bootstrap := flag.String("brokers", "127.0.0.1:9092", "bootstrap broker")
	topic := flag.String("topic", "kafkago", "topic (created with 1 partition first)")
	group := flag.String("group", "kafkago-group", "consumer group")
	perBatch := flag.Int("messages", 20, "messages per (acks, codec)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	conn, err := kafka.DialContext(ctx, "tcp", *bootstrap)
	if err == nil {
		err = conn.CreateTopics(kafka.TopicConfig{Topic: *topic, NumPartitions: 1, ReplicationFactor: 1})
		conn.Close()
	}
	report("create the topic", err, *topic)

	codecs := []struct {
		name  string
		codec kafka.CompressionCodec
	}{{"none", nil}, {"gzip", gzip.NewCompressionCodec()}, {"snappy", snappy.NewCompressionCodec()},
		{"lz4", lz4.NewCompressionCodec()}}
	produced := 0
	for _, acks := range []int{1, -1} {
		for _, c := range codecs {
			writer := kafka.NewWriter(kafka.WriterConfig{Brokers: []string{*bootstrap}, Topic: *topic,
				RequiredAcks: acks, CompressionCodec: c.codec, BatchTimeout: 10 * time.Millisecond})
			messages := make([]kafka.Message, *perBatch)
			for i := range messages {
				messages[i] = kafka.Message{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%d-%s-%d", acks, c.name, i))}
			}
			err := writer.WriteMessages(ctx, messages...)
			if err == nil {
				produced += *perBatch
			}
			report(fmt.Sprintf("produce acks=%d codec=%s", acks, c.name), err, *perBatch)
			writer.Close()
		}
	}

	reader := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, GroupID: *group, Topic: *topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
	received := 0
	for received < produced {
		message, err := reader.FetchMessage(ctx)
		if err == nil {
			err = reader.CommitMessages(ctx, message)
		}
		if err != nil {
			report("consume in a group and commit", err, received)
			break
		}
		received++
	}
	if received == produced {
		report("consume in a group and commit", nil, received)
	}
	reader.Close()

	// A new member of the group starts where the first one committed: nothing left to read.
	resumed := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, GroupID: *group, Topic: *topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	message, err := resumed.FetchMessage(short)
	stop()
	if err == context.DeadlineExceeded {
		err = nil
	} else if err == nil {
		err = fmt.Errorf("read offset %d again after it was committed", message.Offset)
	}
	report("the committed offset holds for the next member", err, nil)
	resumed.Close()

	leader, err := kafka.DialLeader(ctx, "tcp", *bootstrap, *topic, 0)
	if err == nil {
		var first, last int64
		first, last, err = leader.ReadOffsets()
		if err == nil && last-first != int64(produced) {
			err = fmt.Errorf("offsets [%d, %d) for %d messages", first, last, produced)
		}
		leader.Close()
	}
	report("ListOffsets", err, produced)
	if failed {
		os.Exit(1)
	}
}
