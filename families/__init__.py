"""The tool families: one module per family, holding its tools' input models, output models and
reads together.

    class GetReleaseInput(ToolInput): ...          what the tool accepts (its schema is this model)
    class GetReleaseOutput(Envelope): ...          what it answers (its output schema)
    async def get_release(args: GetReleaseInput, call: CallContext) -> GetReleaseOutput

A read takes the validated input and returns the output model, envelope included (notes,
nextSteps, source). Catalog families read the index (catalog.access); the others call the
upstream client (`call.client`). The gateway (mcp_gateway/tools/) only registers each read under
its tool's name, with its description and transports, so a change to one tool's surface touches
its family module, its test file and its schema snapshot.
"""
