"use strict";
const cdktf = require("cdktf");
function awsProviderDefaultTagsToHclTerraform(struct) {
    const attrs = {
        tags: {
            value: cdktf.hashMapperHcl(cdktf.stringToHclTerraform)(struct.tags),
            isBlock: false,
            type: "map",
            storageClassType: "stringMap",
        },
    };
    return attrs;
}
class AwsProvider extends cdktf.TerraformProvider {
    /**
    * @param options AwsProviderConfig = {}
    */
    constructor(scope, id, config = {}) {
        super(scope, id, {
            terraformResourceType: 'aws',
        });
        this._alias = config.alias;
        this._region = config.region;
        this._defaultTags = config.defaultTags;
    }
    synthesizeHclAttributes() {
        const attrs = {
            alias: {
                value: cdktf.stringToHclTerraform(this._alias),
                isBlock: false,
                type: "simple",
                storageClassType: "string",
            },
            region: {
                value: cdktf.stringToHclTerraform(this._region),
                isBlock: false,
                type: "simple",
                storageClassType: "string",
            },
            default_tags: {
                value: cdktf.listMapperHcl(awsProviderDefaultTagsToHclTerraform, true)(this._defaultTags),
                isBlock: true,
                type: "list",
                storageClassType: "AwsProviderDefaultTagsList",
            },
        };
        return attrs;
    }
}
exports.AwsProvider = AwsProvider;
