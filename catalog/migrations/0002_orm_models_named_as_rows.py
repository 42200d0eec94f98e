"""The ORM models are renamed to ...Row (they clashed with the upstream client's record models
of the same names). Each table keeps its name, so no data moves: the table is pinned first, then
the model is renamed, which leaves the table as it is."""

from django.db import migrations

RENAMES = [
    ("Product", "ProductRow", "catalog_product", {"ordering": ["product_code"], "verbose_name": "product"}),
    ("ProductSiteAvailability", "ProductSiteAvailabilityRow", "catalog_productsiteavailability",
     {"verbose_name": "product site availability", "verbose_name_plural": "product site availability"}),
    ("Site", "SiteRow", "catalog_site", {"ordering": ["site_code"], "verbose_name": "site"}),
    ("Release", "ReleaseRow", "catalog_release", {"ordering": ["tag"], "verbose_name": "release"}),
    ("Location", "LocationRow", "catalog_location", {"ordering": ["location_type", "name"], "verbose_name": "location"}),
]


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0001_initial"),
    ]

    operations = [
        op
        for old, new, table, options in RENAMES
        for op in (
            migrations.AlterModelTable(name=old, table=table),
            migrations.RenameModel(old_name=old, new_name=new),
            migrations.AlterModelOptions(name=new.lower(), options=options),
        )
    ]
