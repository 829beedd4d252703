package cli

import (
	"bufio"
	"io"
	"iter"
	"text/tabwriter"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// emit writes a command's result: v as indented JSON with --output json, else what text writes,
// through a tabwriter (cells separated by tabs are aligned; a line without tabs is passed through
// as it comes). JSON keeps encoding/json's v1 rules, so every command's output reads as it always
// has; a value of jsonSeq or jsonLater is written as it is produced, so a long result need not be
// held in memory.
func (o *opts) emit(v any, text func(io.Writer)) error {
	bw := bufio.NewWriterSize(o.stdout, 64<<10)
	var err error
	if o.output == "json" {
		enc := jsontext.NewEncoder(bw, jsonv1.DefaultOptionsV1(), jsontext.WithIndent("  "))
		err = json.MarshalEncode(enc, v, jsonv1.DefaultOptionsV1())
	} else {
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		text(tw)
		err = tw.Flush()
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// jsonSeq is a list written as a JSON array item by item, as the sequence yields them: it is
// consumed once. The first error it yields ends the array and is returned.
type jsonSeq[T any] iter.Seq2[T, error]

// MarshalJSONTo implements json.MarshalerTo.
func (s jsonSeq[T]) MarshalJSONTo(enc *jsontext.Encoder) error {
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return err
	}
	for v, err := range s {
		if err != nil {
			return err
		}
		if err := json.MarshalEncode(enc, v); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndArray)
}

// jsonLater is a value computed when it is written: a summary that follows a jsonSeq in the same
// object, known once the sequence has been written.
type jsonLater[T any] func() T

// MarshalJSONTo implements json.MarshalerTo.
func (f jsonLater[T]) MarshalJSONTo(enc *jsontext.Encoder) error { return json.MarshalEncode(enc, f()) }
