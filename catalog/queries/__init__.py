"""Read-side selectors behind the discovery tools, over the in-memory catalog index and the
upstream detail records. Pure functions of their inputs (an index, parsed upstream models); the
async ones take the upstream client as an argument and never build one.

    text.clip(text, budget)                           -> (kept text, clipped?)
    availability.row(by_release, ...)                 one product-site cell, filtered and formatted
    availability.product_mode / site_mode / cell_mode the three modes of eco_get_availability
    products.product_detail(...)                      eco_get_product's record
    sites.site_detail(...)                            eco_get_site's record
"""
