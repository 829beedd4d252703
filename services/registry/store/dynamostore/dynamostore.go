// Package dynamostore keeps the registry in DynamoDB (idgen-regions in the home region, with
// point-in-time recovery in production). Numbers come from a counter item advanced with a
// conditional update, so two concurrent adds can never take one number; the region item is then
// written with attribute_not_exists. If two adds of the same name race, the loser's number stays
// reserved unused (numbers are never reused, and none was published under it).
package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/services/registry/store"
)

// KeyPK is the registry table's partition key (S). Terraform's table definition is checked
// against it.
const KeyPK = "pk"

// Actions are the DynamoDB actions the registry service calls through this driver; its role
// grants these on its table and nothing else. (Seed's TransactWriteItems has no action of its
// own: IAM checks the PutItem of each of its items.)
var Actions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem"}

// Store is a registry in one DynamoDB table with string partition key "pk".
type Store struct {
	db    *dynamodb.Client
	table string
}

var _ store.Store = (*Store)(nil)

// New returns a store on the named table.
func New(db *dynamodb.Client, table string) *Store { return &Store{db: db, table: table} }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyPK: s(pk)}
}

// Tables returns CreateTable of each table on the endpoint it is given (dynamo.Tables): the
// table maker of a local DynamoDB server (dynalite.Options.Tables, testenv.StartDynaliteWithTables).
func Tables(tables ...string) func(ctx context.Context, endpoint string) error {
	return dynamo.Tables(CreateTable, tables...)
}

// CreateTable creates the registry table when missing (development and tests; Terraform in
// production).
func CreateTable(ctx context.Context, db *dynamodb.Client, table string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyPK), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamostore: create %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	return w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, time.Minute)
}

func isCCF(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// mapErr is the driver's one error mapping: what dynamo.Unavailable reports (throttling, server
// faults, network errors, deadlines, a missing table) becomes store.ErrUnavailable, anything else
// stays a plain error; the native error stays wrapped, so errors.As still reaches it. Failed
// conditions are answered where they happen (each names its own contract error).
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if dynamo.Unavailable(err) {
		return fmt.Errorf("dynamostore: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamostore: %s: %w", op, err)
}

func regionItem(r region.Region) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{"pk": s("region#" + r.Name), "number": n(int64(r.Number)), "name": s(r.Name),
		"peer": s(r.Peer), "status": s(r.Status), "added_at": n(r.AddedAt.UnixMilli())}
	if r.RetiredAt != nil {
		it["retired_at"] = n(r.RetiredAt.UnixMilli())
	}
	return it
}

func num(it map[string]types.AttributeValue, name string) (int64, bool) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseInt(v.Value, 10, 64)
	return x, err == nil
}

func str(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func regionOf(it map[string]types.AttributeValue) region.Region {
	nb, _ := num(it, "number")
	added, _ := num(it, "added_at")
	r := region.Region{Number: int(nb), Name: str(it, "name"), Peer: str(it, "peer"), Status: str(it, "status"), AddedAt: time.UnixMilli(added).UTC()}
	if ret, ok := num(it, "retired_at"); ok {
		t := time.UnixMilli(ret).UTC()
		r.RetiredAt = &t
	}
	return r
}

// Seed implements store.Store: the counter item and every region item in one transaction
// (TransactWriteItems), conditioned on the counter being absent, so a crash leaves either no
// registry or the whole seed, never a seeded counter with regions missing.
func (st *Store) Seed(ctx context.Context, regions []region.Region, schedule string) error {
	next := 0
	for _, r := range regions {
		next = max(next, r.Number+1)
	}
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: &st.table,
		Item:                map[string]types.AttributeValue{"pk": s("counter"), "next": n(int64(next)), "schedule": s(schedule)},
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	for _, r := range regions {
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &st.table, Item: regionItem(r)}})
	}
	_, err := st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return nil // seeded already
	}
	return mapErr("seed", err)
}

// List implements store.Store.
func (st *Store) List(ctx context.Context) ([]region.Region, error) {
	items, err := st.scan(ctx, "region#")
	if err != nil {
		return nil, err
	}
	out := make([]region.Region, 0, len(items))
	for _, it := range items {
		out = append(out, regionOf(it))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// scan returns the items whose pk starts with prefix, in pk order (a consistent full scan).
func (st *Store) scan(ctx context.Context, prefix string) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(st.db, &dynamodb.ScanInput{TableName: &st.table, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapErr("scan", err)
		}
		for _, it := range page.Items {
			if strings.HasPrefix(str(it, "pk"), prefix) {
				items = append(items, it)
			}
		}
	}
	sort.Slice(items, func(i, j int) bool { return str(items[i], "pk") < str(items[j], "pk") })
	return items, nil
}

// Get implements store.Store.
func (st *Store) Get(ctx context.Context, name string) (region.Region, error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key("region#" + name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return region.Region{}, mapErr("get", err)
	}
	if out.Item == nil {
		return region.Region{}, fmt.Errorf("%w: %q", store.ErrNotFound, name)
	}
	return regionOf(out.Item), nil
}

// counter reads the counter item, which Seed writes.
func (st *Store) counter(ctx context.Context) (map[string]types.AttributeValue, error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key("counter"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, mapErr("counter", err)
	}
	if out.Item == nil {
		return nil, store.ErrNotSeeded
	}
	return out.Item, nil
}

// NextNumber implements store.Store.
func (st *Store) NextNumber(ctx context.Context) (int, error) {
	it, err := st.counter(ctx)
	if err != nil {
		return 0, err
	}
	v, ok := num(it, "next")
	if !ok {
		return 0, errors.New("dynamostore: the counter item has no number")
	}
	return int(v), nil
}

// Add implements store.Store.
func (st *Store) Add(ctx context.Context, name, peer string, at time.Time) (region.Region, error) {
	if _, err := st.Get(ctx, name); err == nil {
		return region.Region{}, fmt.Errorf("%w: %q", store.ErrExists, name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return region.Region{}, err
	}
	for {
		next, err := st.NextNumber(ctx)
		if err != nil {
			return region.Region{}, err
		}
		if next > region.MaxNumber {
			return region.Region{}, store.ErrFull
		}
		_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &st.table, Key: key("counter"),
			UpdateExpression:          aws.String("SET #next = :after"),
			ConditionExpression:       aws.String("#next = :before"),
			ExpressionAttributeNames:  map[string]string{"#next": "next"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":before": n(int64(next)), ":after": n(int64(next + 1))}})
		if isCCF(err) {
			continue // another add took this number: read the counter again
		}
		if err != nil {
			return region.Region{}, mapErr("add", err)
		}
		r := region.Region{Number: next, Name: name, Peer: peer, Status: region.Active, AddedAt: at.UTC().Truncate(time.Millisecond)}
		_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &st.table, Item: regionItem(r),
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if isCCF(err) {
			return region.Region{}, fmt.Errorf("%w: %q (added concurrently; number %d stays reserved unused)", store.ErrExists, name, next)
		}
		if err != nil {
			return region.Region{}, mapErr("add", err)
		}
		return r, nil
	}
}

// Retire implements store.Store.
func (st *Store) Retire(ctx context.Context, name string, at time.Time) (region.Region, error) {
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &st.table, Key: key("region#" + name),
		UpdateExpression:          aws.String("SET #status = :retired, retired_at = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #status = :active"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":retired": s(region.Retired), ":active": s(region.Active), ":at": n(at.UnixMilli())},
		ReturnValues:              types.ReturnValueAllNew})
	if isCCF(err) {
		r, gerr := st.Get(ctx, name)
		if gerr != nil {
			return r, gerr
		}
		return r, fmt.Errorf("%w: %q", store.ErrRetired, name)
	}
	if err != nil {
		return region.Region{}, mapErr("retire", err)
	}
	return regionOf(out.Attributes), nil
}

// Schedule implements store.Store.
func (st *Store) Schedule(ctx context.Context) (string, error) {
	it, err := st.counter(ctx)
	if err != nil {
		return "", err
	}
	return str(it, "schedule"), nil
}

// Audit implements store.Store.
func (st *Store) Audit(ctx context.Context, e store.AuditEntry) error {
	var b [6]byte
	_, _ = rand.Read(b[:])
	_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &st.table, Item: map[string]types.AttributeValue{
		"pk": s(fmt.Sprintf("audit#%013d#%s", e.At.UnixMilli(), hex.EncodeToString(b[:]))), "at": n(e.At.UnixMilli()),
		"actor": s(e.Actor), "action": s(e.Action), "detail": s(e.Detail)}})
	return mapErr("audit", err)
}

// AuditLog implements store.Store.
func (st *Store) AuditLog(ctx context.Context) ([]store.AuditEntry, error) {
	items, err := st.scan(ctx, "audit#")
	if err != nil {
		return nil, err
	}
	out := make([]store.AuditEntry, 0, len(items))
	for _, it := range items {
		at, _ := num(it, "at")
		out = append(out, store.AuditEntry{At: time.UnixMilli(at).UTC(), Actor: str(it, "actor"), Action: str(it, "action"), Detail: str(it, "detail")})
	}
	return out, nil
}

// Close implements store.Store.
func (st *Store) Close() error { return nil }
