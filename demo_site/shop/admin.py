"""Admin pages for the shop's products and orders."""

from django.contrib import admin

from .models import Order, OrderLine, Product


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["sku", "name", "price", "stock"]
    search_fields = ["sku", "name", "description"]


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0
    autocomplete_fields = ["product"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["order_no", "customer", "state", "eta", "total", "created"]
    list_filter = ["state"]
    list_select_related = ["customer"]
    search_fields = ["order_no", "customer__username", "customer__email"]
    date_hierarchy = "created"
    inlines = [OrderLineInline]
