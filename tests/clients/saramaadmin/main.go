// Command saramaadmin-client makes one partition-reassignment call with sarama 1.45's ClusterAdmin (Debian trixie's
// golang-github-ibm-sarama-dev; tests/support/clients.py builds it), the way Go tools move partitions:
//
//	saramaadmin-client -brokers 127.0.0.1:9092 -topic t alter 3,4   AlterPartitionReassignments, partition 0 -> [3, 4]
//	saramaadmin-client -brokers 127.0.0.1:9092 -topic t cancel      AlterPartitionReassignments, partition 0 -> nil
//	saramaadmin-client -brokers 127.0.0.1:9092 -topic t list        ListPartitionReassignments of partition 0
//
// It prints one JSON line {"ok", "error", "codes", "reassignments"}: codes are the Kafka error codes wrapped in the
// error (sarama reports each partition's error); reassignments maps partition -> {replicas, adding, removing}.
// The exit status is 0 whenever the call was made (a Kafka error is a result), 2 for bad usage.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

type status struct {
	Replicas []int32 `json:"replicas"`
	Adding   []int32 `json:"adding"`
	Removing []int32 `json:"removing"`
}

type result struct {
	Ok            bool             `json:"ok"`
	Error         string           `json:"error,omitempty"`
	Codes         []int16          `json:"codes"`
	Reassignments map[int32]status `json:"reassignments,omitempty"`
}

func usage(message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(2)
}

func replicas(list string) []int32 {
	var ids []int32
	for _, field := range strings.Split(list, ",") {
		id, err := strconv.Atoi(field)
		if err != nil {
			usage("replicas are broker ids separated by commas: " + list)
		}
		ids = append(ids, int32(id))
	}
	return ids
}

// kafkaCodes lists the Kafka error codes err wraps (sarama joins one per failed partition).
func kafkaCodes(err error) []int16 {
	codes := []int16{}
	for code := sarama.KError(1); code < 200; code++ {
		if errors.Is(err, code) {
			codes = append(codes, int16(code))
		}
	}
	return codes
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	topic := flag.String("topic", "", "the topic (its partition 0 is reassigned)")
	flag.Parse()
	if *topic == "" || flag.NArg() < 1 {
		usage("usage: saramaadmin-client -brokers B -topic T alter R1,R2,... | cancel | list")
	}
	config := sarama.NewConfig()
	config.Version = sarama.V2_4_0_0 // the first version with the reassignment calls
	config.ClientID = "saramaadmin-" + *topic
	admin, err := sarama.NewClusterAdmin(strings.Split(*brokers, ","), config)
	if err != nil {
		usage("cannot connect: " + err.Error())
	}
	defer admin.Close()

	out := result{Codes: []int16{}}
	switch flag.Arg(0) {
	case "alter":
		if flag.NArg() != 2 {
			usage("alter takes the new replicas: alter 3,4")
		}
		err = admin.AlterPartitionReassignments(*topic, [][]int32{replicas(flag.Arg(1))})
	case "cancel": // a nil target cancels partition 0's reassignment, as in Kafka's Admin API
		err = admin.AlterPartitionReassignments(*topic, [][]int32{nil})
	case "list":
		var listed map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus
		listed, err = admin.ListPartitionReassignments(*topic, []int32{0})
		out.Reassignments = map[int32]status{}
		for partition, s := range listed[*topic] {
			out.Reassignments[partition] = status{s.Replicas, s.AddingReplicas, s.RemovingReplicas}
		}
	default:
		usage("unknown call " + flag.Arg(0))
	}
	out.Ok = err == nil
	if err != nil {
		out.Error = err.Error()
		out.Codes = kafkaCodes(err)
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}
