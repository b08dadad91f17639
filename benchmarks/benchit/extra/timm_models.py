"""Two timm models built without their pretrained weights (`pretrained=False`: no download),
small: a ResNet-10 (`resnet10t`) on 64x64 images and a two-block vision transformer on 32x32
images. Needs timm (`benchit timm_models.py --with timm`)."""

import timm
import torch

torch.manual_seed(0)

resnet = timm.create_model("resnet10t", pretrained=False, num_classes=10).eval()
vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8,
                        depth=2, num_classes=10).eval()
with torch.no_grad():
    scores = resnet(torch.rand(2, 3, 64, 64))
    tokens = vit(torch.rand(2, 3, 32, 32))
print("resnet10t:", tuple(scores.shape), "vit:", tuple(tokens.shape))
