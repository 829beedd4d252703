package uuidv7

import (
	"encoding/binary"
	"fmt"

	"github.com/gofrs/uuid/v5"
)

// versionV8 is RFC 9562's version 8 (custom); gofrs/uuid names versions up to 7.
const versionV8 = 8

// FromID returns the UUIDv8 carrying a 64-bit idgen ID (see the package doc for the layout). id
// must not be negative (idgen IDs never are).
func FromID(id int64) (uuid.UUID, error) {
	if id < 0 {
		return uuid.Nil, fmt.Errorf("uuidv7: negative id %d", id)
	}
	v := uint64(id)
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[0:8], (v>>16)<<16|0x8000|(v>>4)&0x0fff)
	u[8] = 0x80 | byte(v&0x0f)<<2
	return u, nil
}

// ToID returns the idgen ID a UUIDv8 from FromID carries, refusing any other UUID.
func ToID(u uuid.UUID) (int64, error) {
	if err := checkVersion(u, versionV8); err != nil {
		return 0, err
	}
	hi := binary.BigEndian.Uint64(u[0:8])
	lo := binary.BigEndian.Uint64(u[8:16])
	if hi>>63 != 0 || lo&(1<<58-1) != 0 {
		return 0, fmt.Errorf("%w: %s", ErrNotID, u)
	}
	return int64(hi&^0xffff | (hi&0x0fff)<<4 | (lo>>58)&0x0f), nil
}
