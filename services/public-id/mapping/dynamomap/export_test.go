package dynamomap

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// The items of one mapping, as the driver writes them.
func MappingItems(internal int64, public string) (pub, in map[string]types.AttributeValue) {
	return publicItem(internal, public), internalItem(internal, public)
}
