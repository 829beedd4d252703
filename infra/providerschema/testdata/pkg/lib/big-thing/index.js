"use strict";
const cdktf = require("cdktf");
const index_structs_1 = require("./index-structs");
class BigThing extends cdktf.TerraformResource {
    /**
    * @param options BigThingConfigA
    */
    constructor(scope, id, config) {
        super(scope, id, {
            terraformResourceType: 'aws_big_thing',
        });
        // setting - computed: false, optional: false, required: true
        this._setting = new index_structs_1.BigThingSettingOutputReference(this, "setting");
        this._setting.internalValue = config.setting;
    }
    synthesizeHclAttributes() {
        const attrs = {
            setting: {
                value: index_structs_1.bigThingSettingToHclTerraform(this._setting.internalValue),
                isBlock: true,
                type: "list",
                storageClassType: "BigThingSettingList",
            },
        };
        return attrs;
    }
}
exports.BigThing = BigThing;
