package uuidv7_test

import (
	"fmt"

	"github.com/idgen/idgen/libs/uuidv7"
)

func ExampleFromID() {
	u, _ := uuidv7.FromID(683244571854022659)
	id, _ := uuidv7.ToID(u)
	fmt.Println(u, id)
	// Output: 097b5f51-7012-8a80-8c00-000000000000 683244571854022659
}

func ExampleTime() {
	u, _ := uuidv7.ParseV7("017f22e2-79b0-7cc3-98c4-dc0c0c07398f")
	t, _ := uuidv7.Time(u)
	fmt.Println(t)
	// Output: 2022-02-22 19:22:22 +0000 UTC
}
