"use strict";
const cdktf = require("cdktf");
class DataAwsWidget extends cdktf.TerraformDataSource {
    /**
    * @param options DataAwsWidgetConfig = {}
    */
    constructor(scope, id, config = {}) {
        super(scope, id, {
            terraformResourceType: 'aws_widget',
        });
    }
    // owner - computed: true, optional: false, required: false
    get owner() {
        return this.getStringAttribute('owner');
    }
    synthesizeHclAttributes() {
        const attrs = {};
        return attrs;
    }
}
exports.DataAwsWidget = DataAwsWidget;
