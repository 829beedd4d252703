// Package dynamolease is the production lease store: a DynamoDB lease table and history table
// (aws-sdk-go-v2). Claims and renewals are the exact conditional UpdateItem calls of
// docs/leases.md#claim and docs/leases.md#renew; the driver needs no transactions and no TTL API
// call. Callers test errors against the portable ones only: ConditionalCheckFailedException becomes
// lease.ErrTaken or lease.ErrLost, throttling and unreachability lease.ErrUnavailable (wrapping the
// SDK's error, for logs and errors.As).
package dynamolease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/idcore/lease"
)

// The tables' key schemas (docs/leases.md#tables). Terraform's table definitions are checked
// against these.
const (
	// KeyMachineID is the partition key (N) of the lease table and of the history table.
	KeyMachineID = "machine_id"
	// KeyAt is the history table's sort key (N, Unix ms).
	KeyAt = "at"
	// AttrExpiresAt is the history table's TTL attribute (N, Unix seconds).
	AttrExpiresAt = "expires_at"
)

// GeneratorActions are the DynamoDB actions a generator or embedded process calls through this
// driver: claims, renewals and releases (UpdateItem), the metadata row (GetItem, PutItem), the
// history (PutItem) and the restore fence's TableId (DescribeTable). A fleet's role grants these
// on its region's two tables and nothing else.
var GeneratorActions = []string{"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}

// OperatorActions are what the operators' commands (idgenctl leases: List, History, Quarantine,
// Lift, FenceAll) call beyond GeneratorActions.
var OperatorActions = []string{"dynamodb:Query", "dynamodb:Scan"}

// Store is one DynamoDB lease table and its region's history table.
type Store struct {
	db      *dynamodb.Client
	table   string
	history string
}

var _ lease.Store = (*Store)(nil)

// New returns a store on the named lease table (lease.TableV2 or lease.TableV1) and history table
// (lease.TableHistory).
func New(db *dynamodb.Client, table, history string) *Store {
	return &Store{db: db, table: table, history: history}
}

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func key(machine int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyMachineID: n(int64(machine))}
}

// Claim implements lease.Store with the conditional UpdateItem of docs/leases.md#claim.
func (s *Store) Claim(ctx context.Context, machine int, holder string, now, expiry int64) (lease.Row, error) {
	if machine < 0 {
		return lease.Row{}, fmt.Errorf("dynamolease: machine %d", machine)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 key(machine),
		ConditionExpression: aws.String("attribute_not_exists(machine_id) OR lease_expiry < :now"),
		UpdateExpression:    aws.String("SET holder = :me, lease_expiry = :expiry, lease_epoch = if_not_exists(lease_epoch, :zero) + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": str(holder), ":now": n(now), ":expiry": n(expiry), ":zero": n(0), ":one": n(1),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return lease.Row{}, mapErr("claim", err, lease.ErrTaken)
	}
	return rowOf(machine, out.Attributes)
}

// Renew implements lease.Store with the renewal condition of docs/leases.md#renew.
func (s *Store) Renew(ctx context.Context, machine int, holder string, epoch, newExpiry int64) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 key(machine),
		ConditionExpression: aws.String("holder = :me AND lease_epoch = :my_epoch AND lease_expiry < :new_expiry"),
		UpdateExpression:    aws.String("SET lease_expiry = :new_expiry"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": str(holder), ":my_epoch": n(epoch), ":new_expiry": n(newExpiry),
		},
	})
	return mapErr("renew", err, lease.ErrLost)
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, machine int, holder string, epoch, expiry int64) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 key(machine),
		ConditionExpression: aws.String("holder = :me AND lease_epoch = :my_epoch"),
		UpdateExpression:    aws.String("SET lease_expiry = :expiry"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": str(holder), ":my_epoch": n(epoch), ":expiry": n(expiry),
		},
	})
	return mapErr("release", err, lease.ErrLost)
}

// Get implements lease.Store.
func (s *Store) Get(ctx context.Context, machine int) (lease.Row, error) {
	if machine < 0 {
		return lease.Row{}, lease.ErrNotFound
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key(machine), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return lease.Row{}, mapErr("get", err, nil)
	}
	if out.Item == nil {
		return lease.Row{}, lease.ErrNotFound
	}
	return rowOf(machine, out.Item)
}

// List implements lease.Store (a consistent Scan; the tables hold at most 1,024 rows).
func (s *Store) List(ctx context.Context) ([]lease.Row, error) {
	var rows []lease.Row
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: &s.table, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapErr("list", err, nil)
		}
		for _, item := range page.Items {
			m, err := intAttr(item, "machine_id")
			if err != nil {
				return nil, err
			}
			if m < 0 {
				continue
			}
			r, err := rowOf(int(m), item)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	sortRows(rows)
	return rows, nil
}

func sortRows(rows []lease.Row) {
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j].Machine < rows[j-1].Machine; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

// Quarantine implements lease.Store.
func (s *Store) Quarantine(ctx context.Context, machine int) (lease.Row, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              key(machine),
		UpdateExpression: aws.String("SET holder = :q, lease_expiry = :forever, lease_epoch = if_not_exists(lease_epoch, :zero) + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":q": str(lease.QuarantineHolder), ":forever": n(lease.QuarantineExpiryUnixMs), ":zero": n(0), ":one": n(1),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return lease.Row{}, mapErr("quarantine", err, nil)
	}
	return rowOf(machine, out.Attributes)
}

// Lift implements lease.Store.
func (s *Store) Lift(ctx context.Context, machine int, expiry int64) (lease.Row, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 key(machine),
		ConditionExpression: aws.String("holder = :q"),
		UpdateExpression:    aws.String("SET holder = :lifted, lease_expiry = :expiry, lease_epoch = lease_epoch + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":q": str(lease.QuarantineHolder), ":lifted": str(lease.LiftedHolder), ":expiry": n(expiry), ":one": n(1),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return lease.Row{}, mapErr("lift", err, lease.ErrLost)
	}
	return rowOf(machine, out.Attributes)
}

// FenceAll implements lease.Store: one conditional update per row, so a row changed meanwhile is
// still fenced (its epoch moves on either way).
func (s *Store) FenceAll(ctx context.Context, expiry int64) (int, error) {
	rows, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, r := range rows {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           &s.table,
			Key:                 key(r.Machine),
			ConditionExpression: aws.String("attribute_exists(machine_id) AND holder <> :q"),
			UpdateExpression:    aws.String("SET lease_expiry = :expiry, lease_epoch = lease_epoch + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":q": str(lease.QuarantineHolder), ":expiry": n(expiry), ":one": n(1),
			},
		})
		switch err := mapErr("fence", err, lease.ErrTaken); {
		case err == nil:
			changed++
		case errors.Is(err, lease.ErrTaken): // quarantined meanwhile
		default:
			return changed, err
		}
	}
	return changed, nil
}

// TableID implements lease.Store: DescribeTable's TableId.
func (s *Store) TableID(ctx context.Context) (string, error) {
	out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	if err != nil {
		return "", mapErr("describe table", err, nil)
	}
	if out.Table == nil || out.Table.TableId == nil {
		return "", fmt.Errorf("dynamolease: %s has no TableId", s.table)
	}
	return *out.Table.TableId, nil
}

// The metadata row's attributes: the table ID it names, and the table's rules in milliseconds.
const (
	attrTableID  = "table_id"
	attrLeaseMs  = "lease_ms"
	attrRenewMin = "renew_min_ms"
	attrRenewMax = "renew_max_ms"
	attrMarginMs = "margin_ms"
	// attrLeaseTable names the lease table a history event belongs to.
	attrLeaseTable = "lease_table"
)

func msOf(item map[string]types.AttributeValue, name string) time.Duration {
	v, _ := intAttr(item, name)
	return time.Duration(v) * time.Millisecond
}

func rulesOf(item map[string]types.AttributeValue) lease.Rules {
	if _, ok := item[attrLeaseMs]; !ok {
		return lease.Rules{}
	}
	return lease.Rules{Lease: msOf(item, attrLeaseMs), RenewMin: msOf(item, attrRenewMin), RenewMax: msOf(item, attrRenewMax), Margin: msOf(item, attrMarginMs)}
}

// putRules adds the rules' attributes to an item (nothing for zero rules).
func putRules(item map[string]types.AttributeValue, r lease.Rules) map[string]types.AttributeValue {
	if !r.IsZero() {
		item[attrLeaseMs], item[attrRenewMin] = n(r.Lease.Milliseconds()), n(r.RenewMin.Milliseconds())
		item[attrRenewMax], item[attrMarginMs] = n(r.RenewMax.Milliseconds()), n(r.Margin.Milliseconds())
	}
	return item
}

// rulesValues are the rules as expression values :<prefix>l, :<prefix>rmin, :<prefix>rmax, :<prefix>m.
func rulesValues(vals map[string]types.AttributeValue, prefix string, r lease.Rules) map[string]types.AttributeValue {
	vals[":"+prefix+"l"], vals[":"+prefix+"rmin"] = n(r.Lease.Milliseconds()), n(r.RenewMin.Milliseconds())
	vals[":"+prefix+"rmax"], vals[":"+prefix+"m"] = n(r.RenewMax.Milliseconds()), n(r.Margin.Milliseconds())
	return vals
}

const setRules = "lease_ms = :l, renew_min_ms = :rmin, renew_max_ms = :rmax, margin_ms = :m"

// Meta implements lease.Store.
func (s *Store) Meta(ctx context.Context) (lease.Meta, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key(lease.MetaMachine), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return lease.Meta{}, mapErr("meta", err, nil)
	}
	if out.Item == nil {
		return lease.Meta{}, lease.ErrNotFound
	}
	return lease.Meta{TableID: strAttr(out.Item, attrTableID), Rules: rulesOf(out.Item)}, nil
}

func metaItem(m lease.Meta) map[string]types.AttributeValue {
	return putRules(map[string]types.AttributeValue{"machine_id": n(lease.MetaMachine), "holder": str("METADATA"), attrTableID: str(m.TableID)}, m.Rules)
}

// InitMeta implements lease.Store.
func (s *Store) InitMeta(ctx context.Context, m lease.Meta) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           &s.table,
		Item:                metaItem(m),
		ConditionExpression: aws.String("attribute_not_exists(machine_id)"),
	})
	return mapErr("init meta", err, lease.ErrTaken)
}

// InitRules implements lease.Store.
func (s *Store) InitRules(ctx context.Context, r lease.Rules) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       key(lease.MetaMachine),
		ConditionExpression:       aws.String("attribute_exists(machine_id) AND attribute_not_exists(lease_ms)"),
		UpdateExpression:          aws.String("SET " + setRules),
		ExpressionAttributeValues: rulesValues(map[string]types.AttributeValue{}, "", r),
	})
	return mapErr("init rules", err, lease.ErrTaken)
}

// SetRules implements lease.Store.
func (s *Store) SetRules(ctx context.Context, old, r lease.Rules) error {
	cond := "lease_ms = :ol AND renew_min_ms = :ormin AND renew_max_ms = :ormax AND margin_ms = :om"
	vals := rulesValues(map[string]types.AttributeValue{}, "", r)
	if old.IsZero() {
		cond = "attribute_exists(machine_id) AND attribute_not_exists(lease_ms)"
	} else {
		vals = rulesValues(vals, "o", old)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       key(lease.MetaMachine),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET " + setRules),
		ExpressionAttributeValues: vals,
	})
	return mapErr("set rules", err, lease.ErrTaken)
}

// SetMeta implements lease.Store: an UpdateItem, so rules already in the row stay when m has none.
func (s *Store) SetMeta(ctx context.Context, m lease.Meta) error {
	update := "SET holder = :h, table_id = :t"
	vals := map[string]types.AttributeValue{":h": str("METADATA"), ":t": str(m.TableID)}
	if !m.Rules.IsZero() {
		update += ", " + setRules
		vals = rulesValues(vals, "", m.Rules)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: key(lease.MetaMachine),
		UpdateExpression: aws.String(update), ExpressionAttributeValues: vals,
	})
	return mapErr("set meta", err, nil)
}

// AppendHistory implements lease.Store: a conditional put; on a collision in the same millisecond
// it moves to the next one.
func (s *Store) AppendHistory(ctx context.Context, ev lease.Event) error {
	for at := ev.AtUnixMs; at < ev.AtUnixMs+1000; at++ {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.history,
			Item: putRules(map[string]types.AttributeValue{
				KeyMachineID: n(int64(ev.Machine)), KeyAt: n(at), "event": str(string(ev.Kind)), "holder": str(ev.Holder),
				"lease_epoch": n(ev.Epoch), "lease_expiry": n(ev.ExpiryUnixMs),
				AttrExpiresAt:  n((at + lease.HistoryRetentionMs) / 1000),
				attrLeaseTable: str(s.table), attrTableID: str(ev.TableID),
			}, ev.Rules),
			ConditionExpression: aws.String("attribute_not_exists(machine_id)"),
		})
		switch err := mapErr("history", err, lease.ErrTaken); {
		case err == nil:
			return nil
		case !errors.Is(err, lease.ErrTaken):
			return err
		}
	}
	return fmt.Errorf("dynamolease: history: no free millisecond after %d for machine %d", ev.AtUnixMs, ev.Machine)
}

// History implements lease.Store.
func (s *Store) History(ctx context.Context, machine int, from, to int64) ([]lease.Event, error) {
	var out []lease.Event
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                &s.history,
		KeyConditionExpression:   aws.String("machine_id = :m AND #at BETWEEN :from AND :to"),
		FilterExpression:         aws.String("attribute_not_exists(lease_table) OR lease_table = :table"),
		ExpressionAttributeNames: map[string]string{"#at": "at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":m": n(int64(machine)), ":from": n(from), ":to": n(to), ":table": str(s.table),
		},
		ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapErr("history", err, nil)
		}
		for _, item := range page.Items {
			ev := lease.Event{Machine: machine}
			var err error
			if ev.AtUnixMs, err = intAttr(item, "at"); err != nil {
				return nil, err
			}
			ev.Kind, ev.Holder = lease.EventKind(strAttr(item, "event")), strAttr(item, "holder")
			ev.Epoch, _ = intAttr(item, "lease_epoch")
			ev.ExpiryUnixMs, _ = intAttr(item, "lease_expiry")
			ev.Table, ev.TableID, ev.Rules = strAttr(item, attrLeaseTable), strAttr(item, attrTableID), rulesOf(item)
			out = append(out, ev)
		}
	}
	return out, nil
}

// HasHistory implements lease.Store: a consistent Scan of the history table for an event naming
// this lease table, stopping at the first. Only a table without a metadata row needs it, so
// generators, whose role has no Scan, never call it once the table is initialised (idgenctl
// leases init, or its first holder in development); without the permission the check fails, and
// nothing is claimed.
func (s *Store) HasHistory(ctx context.Context) (bool, error) {
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:                 &s.history,
		FilterExpression:          aws.String("lease_table = :table"),
		ProjectionExpression:      aws.String("machine_id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":table": str(s.table)},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return false, mapErr("history", err, nil)
		}
		if len(page.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Close implements lease.Store.
func (s *Store) Close() error { return nil }

func rowOf(machine int, item map[string]types.AttributeValue) (lease.Row, error) {
	r := lease.Row{Machine: machine, Holder: strAttr(item, "holder")}
	var err error
	if r.ExpiryUnixMs, err = intAttr(item, "lease_expiry"); err != nil {
		return lease.Row{}, err
	}
	if r.Epoch, err = intAttr(item, "lease_epoch"); err != nil {
		return lease.Row{}, err
	}
	return r, nil
}

func intAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("dynamolease: attribute %s missing or not a number", name)
	}
	x, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamolease: attribute %s: %w", name, err)
	}
	return x, nil
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// mapErr is the driver's one error mapping: a failed condition becomes cond (when the call has
// one), unavailability as dynamo.Unavailable reports it becomes lease.ErrUnavailable; the native
// error stays wrapped, so errors.As still reaches it.
func mapErr(op string, err error, cond error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && cond != nil {
		return cond
	}
	if dynamo.Unavailable(err) {
		return fmt.Errorf("dynamolease: %s: %w: %w", op, lease.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamolease: %s: %w", op, err)
}

// Item returns a lease row as a DynamoDB item with the attributes of docs/leases.md#tables (for
// restore tooling and tests that write rows as a backup holds them).
func Item(r lease.Row) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"machine_id": n(int64(r.Machine)), "holder": str(r.Holder),
		"lease_expiry": n(r.ExpiryUnixMs), "lease_epoch": n(r.Epoch),
	}
}
