"""The compact reference model and loop the product's step is measured against."""
